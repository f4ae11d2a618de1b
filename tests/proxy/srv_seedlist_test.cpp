// mongodb+srv:// seed lists: the checks the drivers' Initial DNS Seedlist Discovery specification
// asks for, on crafted look-up results (the look-ups themselves: test_srv_upstream.py, dnsmasq).
#include "proxy/srv_seedlist.h"

#include <gtest/gtest.h>

#include "proxy/upstream_target.h"

namespace shardscope::proxy {
namespace {

DnsResult srvFound(std::vector<SrvRecord> records) {
  DnsResult r;
  r.status = DnsStatus::Found;
  r.srv = std::move(records);
  return r;
}

DnsResult txtFound(std::vector<std::string> records) {
  DnsResult r;
  r.status = records.empty() ? DnsStatus::NoRecords : DnsStatus::Found;
  r.txt = std::move(records);
  return r;
}

TEST(SrvSeedlist, TargetsMustShareTheParentDomain) {
  EXPECT_TRUE(srvTargetInDomain("cluster0.example.com", "m1.example.com"));
  EXPECT_TRUE(srvTargetInDomain("cluster0.example.com", "m1.shard.example.com."));
  EXPECT_TRUE(srvTargetInDomain("Cluster0.Example.COM", "m1.example.com"));
  EXPECT_FALSE(srvTargetInDomain("cluster0.example.com", "m1.example.org"));
  EXPECT_FALSE(srvTargetInDomain("cluster0.example.com", "m1.evilexample.com"));  // a suffix, not a domain
  EXPECT_FALSE(srvTargetInDomain("cluster0.example.com", "example.com"));
  // Fewer than three labels: the target needs one more level below the SRV name itself.
  EXPECT_TRUE(srvTargetInDomain("example.com", "m1.example.com"));
  EXPECT_FALSE(srvTargetInDomain("example.com", "example.com"));
  EXPECT_FALSE(srvTargetInDomain("example.com", "m1.other.com"));
  EXPECT_TRUE(srvTargetInDomain("localhost", "m1.localhost"));
  EXPECT_FALSE(srvTargetInDomain("localhost", "localhost"));
}

TEST(SrvSeedlist, TxtAllowsOnlyThreeOptions) {
  UriOptions o;
  std::string error;
  EXPECT_TRUE(parseSrvTxt({"authSource=admin&replicaSet=rs0&loadBalanced=false"}, o, error)) << error;
  EXPECT_EQ(o.size(), 3u);
  EXPECT_TRUE(parseSrvTxt({}, o, error));
  for (const char* bad : {"tls=false", "ssl=false", "authSource=admin&readPreference=secondary", "connectTimeoutMS=1"}) {
    error.clear();
    EXPECT_FALSE(parseSrvTxt({bad}, o, error)) << bad;
    EXPECT_NE(error.find("only authSource, replicaSet and loadBalanced"), std::string::npos) << error;
  }
  EXPECT_FALSE(parseSrvTxt({"authSource=admin", "replicaSet=rs0"}, o, error));
  EXPECT_EQ(error, "2 TXT records; at most one is allowed");
  EXPECT_FALSE(parseSrvTxt({"authSource"}, o, error));
  EXPECT_FALSE(parseSrvTxt({"loadBalanced=yes"}, o, error));
}

TEST(SrvSeedlist, StartUpRefusesATargetOutsideTheDomainARescanIgnoresIt) {
  const auto srv = srvFound({{"m1.example.com", 27017, 300}, {"m2.attacker.net", 27017, 60}});
  std::string error;
  EXPECT_FALSE(buildSrvSeedlist("c.example.com", "mongodb", srv, nullptr, true, 0, {}, error));
  EXPECT_NE(error.find("'m2.attacker.net', outside the domain of c.example.com"), std::string::npos) << error;
  auto rescan = buildSrvSeedlist("c.example.com", "mongodb", srv, nullptr, false, 0, {}, error);
  ASSERT_TRUE(rescan);
  ASSERT_EQ(rescan->hosts.size(), 1u);
  EXPECT_EQ(rescan->hosts[0].address(), "m1.example.com:27017");
  EXPECT_EQ(rescan->ttl.count(), 300);  // the TTL of the hosts kept
  // Nothing usable at all: an error even on a rescan (the caller keeps its list).
  EXPECT_FALSE(buildSrvSeedlist("c.example.com", "mongodb", srvFound({{"x.attacker.net", 1, 1}}), nullptr, false, 0, {}, error));
}

TEST(SrvSeedlist, MissingRecordsAndFailedLookUpsAreNamed) {
  std::string error;
  DnsResult none;
  none.status = DnsStatus::NoRecords;
  EXPECT_FALSE(buildSrvSeedlist("c.example.com", "mongodb", none, nullptr, true, 0, {}, error));
  EXPECT_EQ(error, "no SRV records for _mongodb._tcp.c.example.com");
  DnsResult failed;
  failed.error = "no answer from the DNS server";
  EXPECT_FALSE(buildSrvSeedlist("c.example.com", "custom", failed, nullptr, true, 0, {}, error));
  EXPECT_EQ(error, "SRV look-up of _custom._tcp.c.example.com failed: no answer from the DNS server");
  const auto srv = srvFound({{"m1.example.com", 27017, 60}});
  const auto txt = txtFound({"authSource=admin&w=majority"});
  EXPECT_FALSE(buildSrvSeedlist("c.example.com", "mongodb", srv, &txt, true, 0, {}, error));
  EXPECT_EQ(error, "c.example.com: TXT record sets 'w'; only authSource, replicaSet and loadBalanced may be set there");
}

TEST(SrvSeedlist, SrvMaxHostsKeepsHostsInUse) {
  const auto srv = srvFound({{"m1.example.com", 1, 60}, {"m2.example.com", 2, 60}, {"m3.example.com", 3, 60}});
  std::string error;
  auto list = buildSrvSeedlist("c.example.com", "mongodb", srv, nullptr, false, 2, {{"m3.example.com", 3, {}}}, error);
  ASSERT_TRUE(list);
  ASSERT_EQ(list->hosts.size(), 2u);
  EXPECT_EQ(list->hosts[0].address(), "m3.example.com:3");
}

TEST(SrvSeedlist, OwnConnectionUriKeepsCredentialsAndOptionsAndAddsTxtAndTls) {
  const std::vector<MongosPool::Endpoint> hosts{{"m1.example.com", 27017, {}}, {"m2.example.com", 27018, "10.0.0.2"}};
  EXPECT_EQ(seedlistUri("mongodb+srv://u:p%40w@c.example.com/shop?authSource=other&srvMaxHosts=2&appName=x", hosts,
                        {{"authSource", "admin"}, {"replicaSet", "rs0"}}, true),
            "mongodb://u:p%40w@m1.example.com:27017,10.0.0.2:27018/shop?authSource=other&appName=x&replicaSet=rs0&tls=true");
  EXPECT_EQ(seedlistUri("mongodb+srv://c.example.com/?tls=false", hosts, {}, false),
            "mongodb://m1.example.com:27017,10.0.0.2:27018/?tls=false");
  EXPECT_EQ(seedlistUri("mongodb+srv://c.example.com", {hosts[0]}, {}, true), "mongodb://m1.example.com:27017/?tls=true");
}

TEST(SrvSeedlist, UriParsingKeepsTheSrvNameAndDefaultsTlsOn) {
  std::string error;
  auto t = parseUpstreamUri("mongodb+srv://u:p@c.example.com/?srvServiceName=mongos&srvMaxHosts=3", error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->srv_host, "c.example.com");
  EXPECT_EQ(t->srv_service_name, "mongos");
  EXPECT_EQ(t->srv_max_hosts, 3);
  EXPECT_TRUE(t->tls);
  EXPECT_TRUE(t->hosts.empty());
  t = parseUpstreamUri("mongodb+srv://c.example.com/?tls=false", error);
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->tls);
  EXPECT_FALSE(parseUpstreamUri("mongodb+srv://c.example.com:27017/", error));  // no port in an SRV URI
  EXPECT_FALSE(parseUpstreamUri("mongodb+srv://a.example.com,b.example.com/", error));
}

TEST(SrvSeedlist, DnsServerAddress) {
  std::string error;
  auto s = DnsServer::parse("127.0.0.1:5353", error);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->port, 5353);
  EXPECT_EQ(DnsServer::parse("10.0.0.2", error)->port, 53);
  EXPECT_FALSE(DnsServer::parse("dns.example.com:53", error));
  EXPECT_FALSE(DnsServer::parse("127.0.0.1:0", error));
  EXPECT_FALSE(DnsServer::parse("127.0.0.1:53x", error));
}

}  // namespace
}  // namespace shardscope::proxy
