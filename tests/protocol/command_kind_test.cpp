// The one command table: kinds and traits that the pipeline, targeting and the compression rules
// read, so a name classified two ways in two places cannot happen again.
#include <gtest/gtest.h>

#include "protocol/command_kind.h"

#include <cctype>
#include <random>
#include <string>

#include "protocol/command_kind_table.h"
#include "protocol/command_view.h"
#include "protocol/op_msg.h"
#include "tests/support/bson_builders.h"

namespace shardscope::protocol {
namespace {

TEST(CommandKind, NamesMapToOneKind) {
  EXPECT_EQ(classifyCommand("find").kind, CommandKind::Find);
  EXPECT_EQ(classifyCommand("getMore").kind, CommandKind::GetMore);
  EXPECT_EQ(classifyCommand("killCursors").kind, CommandKind::KillCursors);
  EXPECT_EQ(classifyCommand("findandmodify").kind, CommandKind::FindAndModify);
  EXPECT_EQ(classifyCommand("findAndModify").kind, CommandKind::FindAndModify);
  EXPECT_EQ(classifyCommand("ismaster").kind, CommandKind::Hello);
  EXPECT_EQ(classifyCommand("GETMORE").kind, CommandKind::Other);  // the server is case-sensitive
  EXPECT_EQ(classifyCommand("").kind, CommandKind::Other);
  EXPECT_TRUE(classifyCommand("getMore").continues_cursor);
  EXPECT_TRUE(classifyCommand("count").reads);
  EXPECT_TRUE(classifyCommand("bulkWrite").writes);
  EXPECT_EQ(commandKindName(CommandKind::FindAndModify), "findAndModify");
}

// The hello and never-compressed predicates read the same table.
TEST(CommandKind, HelloAndNeverCompressedComeFromTheTable) {
  for (const char* name : {"hello", "isMaster", "ismaster"}) {
    EXPECT_TRUE((classifyCommand(name).kind == CommandKind::Hello)) << name;
    EXPECT_TRUE(classifyCommand(name).never_compressed) << name;
  }
  for (const char* name : {"saslStart", "saslContinue", "authenticate", "getnonce", "createUser", "updateUser",
                           "copydbSaslStart", "copydbgetnonce", "copydb"})
    EXPECT_TRUE(classifyCommand(name).never_compressed) << name;
  for (const char* name : {"find", "insert", "ping", "HELLO"}) {
    EXPECT_FALSE(classifyCommand(name).never_compressed) << name;
    EXPECT_FALSE((classifyCommand(name).kind == CommandKind::Hello)) << name;
  }
}

// Every trait a feature reads comes from the same row: the mirror's class, the catalog changes,
// the commands that run on every shard, the credentials the capture must never write, the
// handshake fault injection skips, and the commands whose first value names no collection.
TEST(CommandKind, FeatureTraitsComeFromTheTable) {
  EXPECT_EQ(classifyCommand("find").mirror, MirrorClass::Read);
  EXPECT_EQ(classifyCommand("aggregate").mirror, MirrorClass::Read);
  EXPECT_EQ(classifyCommand("insert").mirror, MirrorClass::Write);
  EXPECT_EQ(classifyCommand("killCursors").mirror, MirrorClass::Cursor);
  EXPECT_EQ(classifyCommand("commitTransaction").mirror, MirrorClass::Transaction);
  EXPECT_EQ(classifyCommand("hello").mirror, MirrorClass::Other);
  for (const char* name : {"create", "drop", "createIndexes", "dropIndexes", "collMod", "renameCollection", "dropDatabase"}) {
    EXPECT_TRUE(classifyCommand(name).ddl) << name;
    EXPECT_EQ(classifyCommand(name).mirror, MirrorClass::Write) << name;
  }
  for (const char* name : {"createIndexes", "dropIndexes", "drop", "collMod", "validate", "collStats", "reIndex"})
    EXPECT_TRUE(classifyCommand(name).collection_wide) << name;
  EXPECT_FALSE(classifyCommand("validate").ddl);
  // Credentials are recognised in any spelling (the capture must never write them).
  for (const char* name : {"saslStart", "SASLSTART", "copydbsaslstart", "createUser", "CREATEUSER", "getnonce"})
    EXPECT_TRUE(classifyCommand(name).carries_secrets) << name;
  EXPECT_EQ(classifyCommand("SASLSTART").kind, CommandKind::Other);
  EXPECT_FALSE(classifyCommand("SASLSTART").never_compressed);  // only the exact name is a handshake
  EXPECT_FALSE(classifyCommand("find").carries_secrets);
  for (const char* name : {"hello", "isMaster", "ismaster", "saslStart", "saslContinue", "authenticate", "endSessions"})
    EXPECT_TRUE(classifyCommand(name).never_faulted) << name;
  EXPECT_FALSE(classifyCommand("getnonce").never_faulted);
  for (const char* name : {"renameCollection", "shardCollection", "saslStart", "authenticate", "mapreduce.shardedfinish"})
    EXPECT_TRUE(classifyCommand(name).first_value_not_collection) << name;
  EXPECT_EQ(classifyCommand("explain").kind, CommandKind::Explain);
}

// Names grouped by length give what the scan of the whole table gave: for every name in the table,
// for each in other cases, shortened and lengthened, and for random names (mostly short, from
// the letters of command names, so some hit a name's length and its letters).
bool sameTraits(const CommandTraits& a, const CommandTraits& b) {
  return a.kind == b.kind && a.mirror == b.mirror && a.never_compressed == b.never_compressed &&
         a.carries_secrets == b.carries_secrets && a.never_faulted == b.never_faulted && a.reads == b.reads &&
         a.writes == b.writes && a.continues_cursor == b.continues_cursor && a.ddl == b.ddl &&
         a.collection_wide == b.collection_wide && a.first_value_not_collection == b.first_value_not_collection &&
         a.spelling == b.spelling;
}

void expectAsTheScan(std::string_view name) {
  EXPECT_TRUE(sameTraits(classifyCommand(name), classifyCommandByScan(name))) << name;
}

TEST(CommandKind, LookupByLengthAgreesWithTheScan) {
  for (std::string_view name : commandTableNames()) {
    expectAsTheScan(name);
    std::string upper(name), lower(name);
    for (char& c : upper) c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
    for (char& c : lower) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
    expectAsTheScan(upper);
    expectAsTheScan(lower);
    expectAsTheScan(name.substr(0, name.size() - 1));
    expectAsTheScan(std::string(name) + "x");
  }
  std::mt19937 rng(29);
  const std::string letters = "abcdefghilmnorstuvwxyzACDGIMSTU.$_";
  for (int i = 0; i < 200000; ++i) {
    std::string name(rng() % 26, ' ');
    for (char& c : name) c = letters[rng() % letters.size()];
    expectAsTheScan(name);
  }
}

// The view is classified once, when it is built: every feature reads view.traits.
TEST(CommandKind, TheViewCarriesItsTraits) {
  testing::Doc body(R"({"renameCollection": "d.a", "to": "d.b", "autocommit": false, "$db": "admin"})");
  std::vector<uint8_t> message;
  encodeOpMsg({}, 0, {bson_get_data(body.get()), body.get()->len}, {}, message);
  OpMsg msg;
  ASSERT_TRUE(decodeOpMsg(message, msg).ok());
  CommandView view;
  ASSERT_TRUE(buildCommandView(msg, view).ok());
  EXPECT_TRUE(view.traits.ddl);
  EXPECT_TRUE(view.collection.empty());  // its first value is a namespace, not a collection
  EXPECT_TRUE(view.inTransaction);
}

}  // namespace
}  // namespace shardscope::protocol
