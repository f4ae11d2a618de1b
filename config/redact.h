// Secrets never leave the process: every log line and every error or page text that may carry a
// mongodb:// URI or a driver error passes through redactSecrets().
#pragma once
#include <string>
#include <string_view>

namespace shardscope::config {

// `text` with the password of every mongodb:// and mongodb+srv:// URI replaced by "***"
// (user:***@host), so are the values of its secret options (tlsCertificateKeyFilePassword, its
// ssl* alias, authMechanismProperties' AWS_SESSION_TOKEN), and every registered secret. Text
// without any comes back unchanged. Every page that shows a configured URI (/config) uses it too.
std::string redactSecrets(std::string_view text);

// A secret that may show up outside a URI (the cluster password inside a driver error, say).
// Secrets shorter than 4 characters are not registered: masking every "a" would garble the log
// and such a password is no secret anyway.
void registerSecret(const std::string& secret);

}  // namespace shardscope::config
