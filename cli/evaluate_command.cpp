// `shardscope evaluate --from URL [--from URL ...] [--file PATH ...] [--json] [--token T]`: fetches
// each sidecar's /evaluate/sketches, merges the sketches and prints one evaluation (text by default).
#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <bson/bson.h>

#include "evaluation/evaluator.h"

namespace shardscope::cli {
namespace {

// A sidecar without evaluation.allow_values exports no field values ("values": false).
bool exportsHashesOnly(const std::string& sketches) {
  bson_error_t error;
  bson_t* doc = bson_new_from_json(reinterpret_cast<const uint8_t*>(sketches.data()),
                                   static_cast<ssize_t>(sketches.size()), &error);
  if (!doc) return false;
  bson_iter_t it;
  bool hashesOnly = bson_iter_init_find(&it, doc, "values") && BSON_ITER_HOLDS_BOOL(&it) && !bson_iter_bool(&it);
  bson_destroy(doc);
  return hashesOnly;
}

void usage(FILE* out) {
  std::fputs(
      "usage: shardscope evaluate --from URL [--from URL ...] [--file PATH ...] [--json] [--token TOKEN]\n"
      "\n"
      "  --from URL    a sidecar's admin endpoint (http://127.0.0.1:9901) or its /evaluate/sketches URL;\n"
      "                repeat for a fleet: the sketches are merged into one evaluation\n"
      "  --file PATH   a saved /evaluate/sketches export (offline)\n"
      "  --json        print JSON instead of the text report\n"
      "  --token T     bearer token for the admin endpoints (default: $SHARDSCOPE_ADMIN_TOKEN)\n",
      out);
}

// A plain HTTP/1.1 GET (admin endpoints are local, plain HTTP); returns false with `error` set.
bool httpGet(const std::string& url, const std::string& token, std::string& body, std::string& error) {
  std::string_view u = url;
  if (u.rfind("http://", 0) != 0) {
    error = url + ": only http:// URLs are supported";
    return false;
  }
  u.remove_prefix(7);
  size_t slash = u.find('/');
  std::string hostport(u.substr(0, slash));
  std::string path = slash == std::string_view::npos ? "/" : std::string(u.substr(slash));
  if (path == "/" || path.empty()) path = "/evaluate/sketches";
  std::string host = hostport, port = "80";
  if (!hostport.empty() && hostport[0] == '[') {
    size_t close = hostport.find(']');
    host = hostport.substr(1, close - 1);
    if (close + 1 < hostport.size() && hostport[close + 1] == ':') port = hostport.substr(close + 2);
  } else if (size_t colon = hostport.rfind(':'); colon != std::string::npos) {
    host = hostport.substr(0, colon);
    port = hostport.substr(colon + 1);
  }
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    error = url + ": " + gai_strerror(rc);
    return false;
  }
  int fd = -1;
  for (addrinfo* a = res; a; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    timeval tv{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) {
    error = url + ": cannot connect: " + std::strerror(errno);
    return false;
  }
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: " + hostport + "\r\nConnection: close\r\nAccept: application/json\r\n";
  if (!token.empty()) req += "Authorization: Bearer " + token + "\r\n";
  req += "\r\n";
  for (size_t sent = 0; sent < req.size();) {
    ssize_t n = send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      error = url + ": send failed";
      close(fd);
      return false;
    }
    sent += static_cast<size_t>(n);
  }
  std::string resp;
  char buf[65536];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0) {
      error = url + ": read failed or timed out";
      close(fd);
      return false;
    }
    if (n == 0) break;
    resp.append(buf, static_cast<size_t>(n));
    if (resp.size() > (size_t{512} << 20)) {
      error = url + ": response too large";
      close(fd);
      return false;
    }
  }
  close(fd);
  size_t head_end = resp.find("\r\n\r\n");
  if (head_end == std::string::npos) {
    error = url + ": malformed HTTP response";
    return false;
  }
  std::string head = resp.substr(0, head_end);
  int status = 0;
  std::sscanf(head.c_str(), "HTTP/%*s %d", &status);
  body = resp.substr(head_end + 4);
  std::string lower = head;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.find("transfer-encoding: chunked") != std::string::npos) {
    std::string out;
    size_t pos = 0;
    while (pos < body.size()) {
      size_t eol = body.find("\r\n", pos);
      if (eol == std::string::npos) break;
      size_t len = std::strtoul(body.substr(pos, eol - pos).c_str(), nullptr, 16);
      if (len == 0) break;
      out.append(body, eol + 2, len);
      pos = eol + 2 + len + 2;
    }
    body = std::move(out);
  }
  if (status != 200) {
    error = url + ": HTTP " + std::to_string(status) + (body.empty() ? "" : ": " + body.substr(0, 200));
    return false;
  }
  return true;
}

}  // namespace

int runEvaluate(int argc, char** argv) {
  std::vector<std::string> urls, files;
  bool json = false;
  const char* env_token = std::getenv("SHARDSCOPE_ADMIN_TOKEN");
  std::string token = env_token ? env_token : "";
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    std::string v;
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--from" && value(v)) {
      urls.push_back(v);
    } else if (a == "--file" && value(v)) {
      files.push_back(v);
    } else if (a == "--token" && value(v)) {
      token = v;
    } else {
      std::fprintf(stderr, "shardscope evaluate: unknown or incomplete option '%s'\n\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  if (urls.empty() && files.empty()) {
    usage(stderr);
    return 2;
  }
  std::vector<std::string> sketches;
  for (const auto& url : urls) {
    std::string body, error;
    if (!httpGet(url, token, body, error)) {
      std::fprintf(stderr, "shardscope evaluate: %s\n", error.c_str());
      return 1;
    }
    sketches.push_back(std::move(body));
  }
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "shardscope evaluate: cannot read %s\n", path.c_str());
      return 1;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    sketches.push_back(ss.str());
  }
  size_t hashesOnly = 0;
  for (const auto& s : sketches) hashesOnly += exportsHashesOnly(s);
  if (hashesOnly)
    std::fprintf(stderr,
                 "shardscope evaluate: note: %zu of %zu export(s) carry hashes and counts only (evaluation.allow_values "
                 "is off there): cardinality, frequency, monotonicity and hashed keys are evaluated across the fleet; "
                 "ranged split points and sampled queries only from exports with values\n",
                 hashesOnly, sketches.size());
  std::string error;
  std::string out = evaluation::Evaluator::mergeAndEvaluate(sketches, !json, error);
  if (!error.empty()) {
    std::fprintf(stderr, "shardscope evaluate: %s\n", error.c_str());
    return 1;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (!out.empty() && out.back() != '\n') std::fputc('\n', stdout);
  return 0;
}

}  // namespace shardscope::cli
