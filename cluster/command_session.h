// Commands run in one logical session of a pooled client: the mirror runs each client
// connection's commands on the shadow cluster in a session of their own, so a cursor's getMores
// run in the session that opened it (mongos refuses them otherwise). A server without sessions
// gets implicit ones.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <string>

#include "cluster/client_factory.h"

typedef struct _mongoc_client_session_t mongoc_client_session_t;

namespace shardscope::cluster {

struct CommandAnswer {
  bool answered = false;    // the server replied (ok, or a server or write-concern error): `reply` holds it
  bson_t reply;             // always initialised; freed with the answer
  std::string message;      // !answered: why (network, timeout, server selection); may echo what a server said
  uint32_t error_domain = 0, error_code = 0;  // !answered: libmongoc's bson_error_t domain and code
  uint64_t latency_ns = 0;  // the round trip as this thread saw it
  CommandAnswer() { bson_init(&reply); }
  ~CommandAnswer() { bson_destroy(&reply); }
  CommandAnswer(const CommandAnswer&) = delete;
  CommandAnswer& operator=(const CommandAnswer&) = delete;
};

class CommandSession {
 public:
  explicit CommandSession(PooledClient& client) : client_(client) {}
  ~CommandSession();
  CommandSession(const CommandSession&) = delete;
  CommandSession& operator=(const CommandSession&) = delete;

  // Runs `command` on database `db`; fills `answer` (its reply replaced).
  void run(const std::string& db, const bson_t* command, CommandAnswer& answer);

 private:
  PooledClient& client_;
  mongoc_client_session_t* session_ = nullptr;
  bool session_tried_ = false;
};

}  // namespace shardscope::cluster
