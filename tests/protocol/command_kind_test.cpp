// The one command table: kinds and traits that the pipeline, targeting and the compression rules
// read, so a name classified two ways in two places cannot happen again.
#include <gtest/gtest.h>

#include "protocol/command_kind.h"
#include "protocol/compression.h"
#include "protocol/hello.h"

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
    EXPECT_TRUE(isHelloCommand(name)) << name;
    EXPECT_TRUE(isNeverCompressed(name)) << name;
  }
  for (const char* name : {"saslStart", "saslContinue", "authenticate", "getnonce", "createUser", "updateUser",
                           "copydbSaslStart", "copydbgetnonce", "copydb"})
    EXPECT_TRUE(isNeverCompressed(name)) << name;
  for (const char* name : {"find", "insert", "ping", "HELLO"}) {
    EXPECT_FALSE(isNeverCompressed(name)) << name;
    EXPECT_FALSE(isHelloCommand(name)) << name;
  }
}

}  // namespace
}  // namespace shardscope::protocol
