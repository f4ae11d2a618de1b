/* Driver scenario for the shardscope integration suite (libmongoc).
 *
 * Usage: driver_scenario URI [DBNAME]
 * Runs a fixed, deterministic scenario and prints one JSON object with its
 * results to stdout. The tests run it directly against the upstream and
 * through the proxy and compare the outputs.
 *
 * Build: cc -O1 -o driver_scenario driver_scenario.c $(pkg-config --cflags --libs libmongoc-1.0)
 */
#include <mongoc/mongoc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BULK_COUNT 1500
#define CURSOR_BATCH 100
#define BIG_SIZE (15 * 1024 * 1024)

static int g_getmores = 0;
static int g_lsid_commands = 0;

static void on_started(const mongoc_apm_command_started_t *event) {
  const char *name = mongoc_apm_command_started_get_command_name(event);
  const bson_t *cmd = mongoc_apm_command_started_get_command(event);
  if (strcmp(name, "getMore") == 0) g_getmores++;
  if (bson_has_field(cmd, "lsid")) g_lsid_commands++;
}

static void die(const char *what, const bson_error_t *err) {
  fprintf(stderr, "%s: %s (domain %u code %u)\n", what, err ? err->message : "", err ? err->domain : 0,
          err ? err->code : 0);
  exit(1);
}

/* JSON output helpers: keys are emitted in call order. */
static int g_first_key = 1;
static void key(const char *k) {
  printf("%s\"%s\":", g_first_key ? "" : ",", k);
  g_first_key = 0;
}
static void out_int(const char *k, long long v) { key(k); printf("%lld", v); }
static void out_bool(const char *k, int v) { key(k); printf("%s", v ? "true" : "false"); }
static void out_str(const char *k, const char *v) {
  key(k);
  putchar('"');
  for (const char *p = v; *p; p++) {
    if (*p == '"' || *p == '\\') putchar('\\');
    putchar(*p);
  }
  putchar('"');
}

static long long iter_number(const bson_t *doc, const char *field) {
  bson_iter_t it;
  if (bson_iter_init_find(&it, doc, field) && BSON_ITER_HOLDS_NUMBER(&it)) return bson_iter_as_int64(&it);
  return -999999;
}

static int error_code_from_reply(const bson_t *reply, const bson_error_t *err) {
  bson_iter_t it, child;
  if (reply && bson_iter_init_find(&it, reply, "writeErrors") && BSON_ITER_HOLDS_ARRAY(&it) &&
      bson_iter_recurse(&it, &child) && bson_iter_next(&child) && BSON_ITER_HOLDS_DOCUMENT(&child)) {
    bson_iter_t d;
    if (bson_iter_recurse(&child, &d) && bson_iter_find(&d, "code")) return (int) bson_iter_as_int64(&d);
  }
  if (reply && bson_iter_init_find(&it, reply, "code") && BSON_ITER_HOLDS_NUMBER(&it))
    return (int) bson_iter_as_int64(&it);
  return err ? (int) err->code : -1;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: driver_scenario URI [DBNAME]\n");
    return 2;
  }
  const char *uri_str = argv[1];
  const char *db_name = argc > 2 ? argv[2] : "scenario_c";
  bson_error_t error;

  mongoc_init();
  mongoc_uri_t *uri = mongoc_uri_new_with_error(uri_str, &error);
  if (!uri) die("uri", &error);
  if (!mongoc_uri_has_option(uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS))
    mongoc_uri_set_option_as_int32(uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS, 20000);
  mongoc_client_t *client = mongoc_client_new_from_uri_with_error(uri, &error);
  if (!client) die("client", &error);
  mongoc_client_set_error_api(client, MONGOC_ERROR_API_VERSION_2);
  mongoc_apm_callbacks_t *cbs = mongoc_apm_callbacks_new();
  mongoc_apm_set_command_started_cb(cbs, on_started);
  mongoc_client_set_apm_callbacks(client, cbs, NULL);

  mongoc_database_t *db = mongoc_client_get_database(client, db_name);
  mongoc_database_drop(db, NULL);

  printf("{");
  out_str("driver", "c");

  /* ping */
  bson_t reply;
  bson_t *cmd = BCON_NEW("ping", BCON_INT32(1));
  if (!mongoc_database_command_simple(db, cmd, NULL, &reply, &error)) die("ping", &error);
  out_int("ping_ok", iter_number(&reply, "ok"));
  bson_destroy(&reply);
  bson_destroy(cmd);

  /* CRUD */
  mongoc_collection_t *crud = mongoc_database_get_collection(db, "crud");
  bson_t *d1 = BCON_NEW("_id", BCON_INT32(1), "name", BCON_UTF8("alpha"), "n", BCON_INT32(1));
  if (!mongoc_collection_insert_one(crud, d1, NULL, NULL, &error)) die("insert_one", &error);
  bson_destroy(d1);
  bson_t *d2 = BCON_NEW("_id", BCON_INT32(2), "name", BCON_UTF8("beta"), "n", BCON_INT32(2));
  bson_t *d3 = BCON_NEW("_id", BCON_INT32(3), "name", BCON_UTF8("gamma"), "n", BCON_INT32(3));
  const bson_t *small[2] = {d2, d3};
  if (!mongoc_collection_insert_many(crud, small, 2, NULL, NULL, &error)) die("insert_many small", &error);
  bson_destroy(d2);
  bson_destroy(d3);

  bson_t *filter = BCON_NEW("_id", BCON_INT32(1));
  mongoc_cursor_t *cur = mongoc_collection_find_with_opts(crud, filter, NULL, NULL);
  const bson_t *doc;
  if (mongoc_cursor_next(cur, &doc)) {
    bson_iter_t it;
    if (bson_iter_init_find(&it, doc, "name")) out_str("find_one_name", bson_iter_utf8(&it, NULL));
  }
  if (mongoc_cursor_error(cur, &error)) die("find_one", &error);
  mongoc_cursor_destroy(cur);

  bson_t *upd = BCON_NEW("$set", "{", "n", BCON_INT32(10), "}");
  if (!mongoc_collection_update_one(crud, filter, upd, NULL, &reply, &error)) die("update_one", &error);
  out_int("update_matched", iter_number(&reply, "matchedCount"));
  out_int("update_modified", iter_number(&reply, "modifiedCount"));
  bson_destroy(&reply);
  bson_destroy(upd);
  bson_destroy(filter);

  bson_t *f3 = BCON_NEW("_id", BCON_INT32(3));
  bson_t *r3 = BCON_NEW("name", BCON_UTF8("gamma2"), "n", BCON_INT32(30));
  if (!mongoc_collection_replace_one(crud, f3, r3, NULL, &reply, &error)) die("replace_one", &error);
  out_int("replace_modified", iter_number(&reply, "modifiedCount"));
  bson_destroy(&reply);
  bson_destroy(f3);
  bson_destroy(r3);

  bson_t *f2 = BCON_NEW("_id", BCON_INT32(2));
  if (!mongoc_collection_delete_one(crud, f2, NULL, &reply, &error)) die("delete_one", &error);
  out_int("delete_count", iter_number(&reply, "deletedCount"));
  bson_destroy(&reply);
  bson_destroy(f2);

  bson_t empty = BSON_INITIALIZER;
  bson_t *sort_opts = BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}");
  cur = mongoc_collection_find_with_opts(crud, &empty, sort_opts, NULL);
  key("crud_docs");
  printf("[");
  int firstdoc = 1;
  while (mongoc_cursor_next(cur, &doc)) {
    bson_iter_t it;
    const char *name = "";
    if (bson_iter_init_find(&it, doc, "name")) name = bson_iter_utf8(&it, NULL);
    printf("%s\"%lld:%s:%lld\"", firstdoc ? "" : ",", iter_number(doc, "_id"), name, iter_number(doc, "n"));
    firstdoc = 0;
  }
  printf("]");
  if (mongoc_cursor_error(cur, &error)) die("find crud", &error);
  mongoc_cursor_destroy(cur);
  int64_t count = mongoc_collection_count_documents(crud, &empty, NULL, NULL, NULL, &error);
  if (count < 0) die("count", &error);
  out_int("crud_count", count);

  /* bulk (OP_MSG document sequence) */
  mongoc_collection_t *bulkc = mongoc_database_get_collection(db, "bulk");
  bson_t **many = calloc(BULK_COUNT, sizeof(bson_t *));
  for (int i = 0; i < BULK_COUNT; i++) {
    char tag[16];
    snprintf(tag, sizeof tag, "t%d", i % 7);
    many[i] = BCON_NEW("_id", BCON_INT32(100000 + i), "i", BCON_INT32(i), "tag", BCON_UTF8(tag));
  }
  if (!mongoc_collection_insert_many(bulkc, (const bson_t **) many, BULK_COUNT, NULL, &reply, &error))
    die("insert_many bulk", &error);
  out_int("bulk_inserted", iter_number(&reply, "insertedCount"));
  bson_destroy(&reply);
  for (int i = 0; i < BULK_COUNT; i++) bson_destroy(many[i]);
  free(many);

  mongoc_bulk_operation_t *bulk = mongoc_collection_create_bulk_operation_with_opts(bulkc, NULL);
  bson_t *bi = BCON_NEW("_id", BCON_INT32(1), "i", BCON_INT32(-1));
  bson_t *bu_f = BCON_NEW("tag", BCON_UTF8("t3"));
  bson_t *bu_u = BCON_NEW("$set", "{", "flag", BCON_BOOL(true), "}");
  bson_t *bd_f = BCON_NEW("tag", BCON_UTF8("t5"));
  mongoc_bulk_operation_insert(bulk, bi);
  mongoc_bulk_operation_update_many_with_opts(bulk, bu_f, bu_u, NULL, &error);
  mongoc_bulk_operation_remove_many_with_opts(bulk, bd_f, NULL, &error);
  if (!mongoc_bulk_operation_execute(bulk, &reply, &error)) die("bulk execute", &error);
  key("bulkwrite");
  printf("[%lld,%lld,%lld,%lld]", iter_number(&reply, "nInserted"), iter_number(&reply, "nMatched"),
         iter_number(&reply, "nModified"), iter_number(&reply, "nRemoved"));
  bson_destroy(&reply);
  mongoc_bulk_operation_destroy(bulk);
  bson_destroy(bi);
  bson_destroy(bu_f);
  bson_destroy(bu_u);
  bson_destroy(bd_f);

  /* cursor over several getMore batches */
  int before = g_getmores;
  bson_t *copts = BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}", "batchSize", BCON_INT32(CURSOR_BATCH));
  cur = mongoc_collection_find_with_opts(bulkc, &empty, copts, NULL);
  long long n = 0, sum = 0, first = 0, last = 0;
  while (mongoc_cursor_next(cur, &doc)) {
    long long id = iter_number(doc, "_id");
    if (n == 0) first = id;
    last = id;
    n++;
    sum += iter_number(doc, "i");
  }
  if (mongoc_cursor_error(cur, &error)) die("cursor", &error);
  mongoc_cursor_destroy(cur);
  bson_destroy(copts);
  out_int("cursor_count", n);
  out_int("cursor_sum", sum);
  out_int("cursor_first", first);
  out_int("cursor_last", last);
  out_int("cursor_getmores", g_getmores - before);

  /* 15 MB document round trip */
  static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  char *big = malloc(BIG_SIZE + 1);
  for (int i = 0; i < BIG_SIZE; i++) big[i] = alphabet[i % 36];
  big[BIG_SIZE] = '\0';
  mongoc_collection_t *bigc = mongoc_database_get_collection(db, "big");
  bson_t bigdoc = BSON_INITIALIZER;
  BSON_APPEND_UTF8(&bigdoc, "_id", "big");
  bson_append_utf8(&bigdoc, "data", -1, big, BIG_SIZE);
  if (!mongoc_collection_insert_one(bigc, &bigdoc, NULL, NULL, &error)) die("insert big", &error);
  bson_destroy(&bigdoc);
  bson_t *bigf = BCON_NEW("_id", BCON_UTF8("big"));
  cur = mongoc_collection_find_with_opts(bigc, bigf, NULL, NULL);
  long long big_len = -1;
  int big_equal = 0;
  if (mongoc_cursor_next(cur, &doc)) {
    bson_iter_t it;
    if (bson_iter_init_find(&it, doc, "data") && BSON_ITER_HOLDS_UTF8(&it)) {
      uint32_t len = 0;
      const char *s = bson_iter_utf8(&it, &len);
      big_len = len;
      big_equal = len == BIG_SIZE && memcmp(s, big, BIG_SIZE) == 0;
    }
  }
  if (mongoc_cursor_error(cur, &error)) die("find big", &error);
  mongoc_cursor_destroy(cur);
  bson_destroy(bigf);
  free(big);
  out_int("big_len", big_len);
  out_bool("big_equal", big_equal);

  /* explicit session */
  mongoc_client_session_t *session = mongoc_client_start_session(client, NULL, &error);
  if (!session) die("start_session", &error);
  int lsid_before = g_lsid_commands;
  bson_t sopts = BSON_INITIALIZER;
  if (!mongoc_client_session_append(session, &sopts, &error)) die("session_append", &error);
  mongoc_collection_t *sc = mongoc_database_get_collection(db, "sess");
  bson_t *sd = BCON_NEW("_id", BCON_INT32(1), "v", BCON_UTF8("s"));
  if (!mongoc_collection_insert_one(sc, sd, &sopts, NULL, &error)) die("session insert", &error);
  bson_t *sf = BCON_NEW("_id", BCON_INT32(1));
  cur = mongoc_collection_find_with_opts(sc, sf, &sopts, NULL);
  if (mongoc_cursor_next(cur, &doc)) {
    bson_iter_t it;
    if (bson_iter_init_find(&it, doc, "v")) out_str("session_find", bson_iter_utf8(&it, NULL));
  }
  if (mongoc_cursor_error(cur, &error)) die("session find", &error);
  mongoc_cursor_destroy(cur);
  bson_destroy(sd);
  bson_destroy(sf);
  bson_destroy(&sopts);
  mongoc_client_session_destroy(session);
  out_int("session_lsid_commands", g_lsid_commands - lsid_before);

  /* error replies */
  bson_t *dup = BCON_NEW("_id", BCON_INT32(1), "name", BCON_UTF8("dup"));
  if (mongoc_collection_insert_one(crud, dup, NULL, &reply, &error)) {
    out_int("dup_code", 0);
  } else {
    out_int("dup_code", error_code_from_reply(&reply, &error));
  }
  bson_destroy(&reply);
  bson_destroy(dup);
  bson_t *unk = BCON_NEW("noSuchCommandForShardscope", BCON_INT32(1));
  if (mongoc_database_command_simple(db, unk, NULL, &reply, &error)) {
    out_int("unknown_cmd_code", 0);
  } else {
    out_int("unknown_cmd_code", error_code_from_reply(&reply, &error));
  }
  bson_destroy(&reply);
  bson_destroy(unk);

  printf("}\n");
  fflush(stdout);

  bson_destroy(sort_opts);
  mongoc_collection_destroy(sc);
  mongoc_collection_destroy(bigc);
  mongoc_collection_destroy(bulkc);
  mongoc_collection_destroy(crud);
  mongoc_database_destroy(db);
  mongoc_client_destroy(client);
  mongoc_apm_callbacks_destroy(cbs);
  mongoc_uri_destroy(uri);
  mongoc_cleanup();
  return 0;
}
