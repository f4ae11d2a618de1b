// The mirror's debug line for a shadow error: a shadow's error text can quote client values (a
// duplicate key error names the key's value), so the line carries the error's domain and code and
// the shape id, and the text only when the user opted in to values (mirror.record_values). The
// command name is a client's: escaped, it cannot forge a log line.
#include <gtest/gtest.h>

#include "shadow/cursor_reconciliation.h"

namespace shardscope::shadow {
namespace {

ShadowAnswer shadowAnswerQuotingAValue() {
  ShadowAnswer a;
  a.error = true;
  a.message = R"(E11000 duplicate key error collection: shop.users index: email_1 dup key: { email: "alice@example.com" })";
  a.domain = 17;  // MONGOC_ERROR_SERVER_SELECTION-like: any domain the client library reports
  a.code = 11000;
  return a;
}

TEST(ShadowErrorLog, TheShadowsTextIsLeftOutUnlessValuesAreRecorded) {
  const std::string line = shadowErrorLogText("insert", 0x1234, shadowAnswerQuotingAValue(), false);
  EXPECT_EQ(line.find("alice@example.com"), std::string::npos) << line;
  EXPECT_EQ(line.find("E11000"), std::string::npos) << line;
  EXPECT_NE(line.find("code 11000"), std::string::npos) << line;
  EXPECT_NE(line.find("domain 17"), std::string::npos) << line;
  EXPECT_NE(line.find("0000000000001234"), std::string::npos) << line;

  const std::string opted = shadowErrorLogText("insert", 0x1234, shadowAnswerQuotingAValue(), true);
  EXPECT_NE(opted.find("alice@example.com"), std::string::npos) << opted;
}

TEST(ShadowErrorLog, AHostileCommandNameCannotForgeALine) {
  ShadowAnswer a = shadowAnswerQuotingAValue();
  a.message = "line one\nforged line \x1b[2J";
  for (bool values : {false, true}) {
    const std::string line = shadowErrorLogText("find\n2026-01-01 [error] forged\x1b[31m", 1, a, values);
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  }
}

TEST(ShadowErrorLog, AnUnreadableReplyIsSaidSo) {
  ShadowAnswer a;
  a.error = true;
  EXPECT_NE(shadowErrorLogText("find", 1, a, false).find("unreadable reply"), std::string::npos);
}

}  // namespace
}  // namespace shardscope::shadow
