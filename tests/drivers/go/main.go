// Driver scenario for the shardscope integration suite (Go driver v2).
//
// Usage: go-scenario URI [DBNAME]
// Runs a fixed, deterministic scenario and prints one JSON object with its
// results to stdout. The integration tests run it once directly against the
// upstream and once through the proxy and compare the two outputs.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

const (
	bulkCount   = 1500
	cursorBatch = 100
	bigSize     = 15 * 1024 * 1024
)

func bigString() string {
	var b strings.Builder
	b.Grow(bigSize)
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	for i := 0; b.Len() < bigSize; i++ {
		b.WriteByte(alphabet[i%len(alphabet)])
	}
	return b.String()
}

func errCode(err error) int {
	if err == nil {
		return 0
	}
	var we mongo.WriteException
	if errors.As(err, &we) {
		if len(we.WriteErrors) > 0 {
			return we.WriteErrors[0].Code
		}
		if we.WriteConcernError != nil {
			return we.WriteConcernError.Code
		}
	}
	var bwe mongo.BulkWriteException
	if errors.As(err, &bwe) {
		if len(bwe.WriteErrors) > 0 {
			return bwe.WriteErrors[0].Code
		}
	}
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return int(ce.Code)
	}
	var se mongo.ServerError
	if errors.As(err, &se) {
		return -2
	}
	return -1
}

func must(err error, what string) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		os.Exit(1)
	}
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: go-scenario URI [DBNAME]")
		os.Exit(2)
	}
	uri := os.Args[1]
	dbName := "scenario_go"
	if len(os.Args) > 2 {
		dbName = os.Args[2]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()

	var getMores, lsidCommands atomic.Int64
	mon := &event.CommandMonitor{
		Started: func(_ context.Context, e *event.CommandStartedEvent) {
			if e.CommandName == "getMore" {
				getMores.Add(1)
			}
			if _, err := e.Command.LookupErr("lsid"); err == nil {
				lsidCommands.Add(1)
			}
		},
	}
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetMonitor(mon).SetServerSelectionTimeout(20 * time.Second))
	must(err, "connect")
	defer client.Disconnect(context.Background())

	res := map[string]any{"driver": "go"}
	db := client.Database(dbName)
	_ = db.Drop(ctx)

	// ping
	var ping bson.M
	must(db.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Decode(&ping), "ping")
	res["ping_ok"] = ping["ok"]

	// CRUD
	crud := db.Collection("crud")
	_, err = crud.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "name", Value: "alpha"}, {Key: "n", Value: 1}})
	must(err, "insertOne")
	_, err = crud.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 2}, {Key: "name", Value: "beta"}, {Key: "n", Value: 2}},
		bson.D{{Key: "_id", Value: 3}, {Key: "name", Value: "gamma"}, {Key: "n", Value: 3}},
	})
	must(err, "insertMany small")
	var one bson.M
	must(crud.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&one), "findOne")
	res["find_one_name"] = one["name"]
	ur, err := crud.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 10}}}})
	must(err, "updateOne")
	res["update_matched"] = ur.MatchedCount
	res["update_modified"] = ur.ModifiedCount
	rr, err := crud.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "name", Value: "gamma2"}, {Key: "n", Value: 30}})
	must(err, "replaceOne")
	res["replace_modified"] = rr.ModifiedCount
	dr, err := crud.DeleteOne(ctx, bson.D{{Key: "_id", Value: 2}})
	must(err, "deleteOne")
	res["delete_count"] = dr.DeletedCount
	cur, err := crud.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	must(err, "find crud")
	var crudDocs []bson.M
	must(cur.All(ctx, &crudDocs), "find crud all")
	docs := []string{}
	for _, d := range crudDocs {
		docs = append(docs, fmt.Sprintf("%v:%v:%v", d["_id"], d["name"], d["n"]))
	}
	res["crud_docs"] = docs
	cnt, err := crud.CountDocuments(ctx, bson.D{})
	must(err, "count")
	res["crud_count"] = cnt

	// bulk (OP_MSG document sequence)
	bulk := db.Collection("bulk")
	many := make([]any, 0, bulkCount)
	for i := 0; i < bulkCount; i++ {
		many = append(many, bson.D{{Key: "_id", Value: 100000 + i}, {Key: "i", Value: i}, {Key: "tag", Value: fmt.Sprintf("t%d", i%7)}})
	}
	ir, err := bulk.InsertMany(ctx, many)
	must(err, "insertMany bulk")
	res["bulk_inserted"] = len(ir.InsertedIDs)
	models := []mongo.WriteModel{
		mongo.NewInsertOneModel().SetDocument(bson.D{{Key: "_id", Value: 1}, {Key: "i", Value: -1}}),
		mongo.NewUpdateManyModel().SetFilter(bson.D{{Key: "tag", Value: "t3"}}).SetUpdate(bson.D{{Key: "$set", Value: bson.D{{Key: "flag", Value: true}}}}),
		mongo.NewDeleteManyModel().SetFilter(bson.D{{Key: "tag", Value: "t5"}}),
	}
	bw, err := bulk.BulkWrite(ctx, models)
	must(err, "bulkWrite")
	res["bulkwrite"] = []int64{bw.InsertedCount, bw.MatchedCount, bw.ModifiedCount, bw.DeletedCount}

	// cursor over several getMore batches
	before := getMores.Load()
	cur, err = bulk.Find(ctx, bson.D{}, options.Find().SetBatchSize(cursorBatch).SetSort(bson.D{{Key: "_id", Value: 1}}))
	must(err, "find bulk")
	var n, sum int64
	var first, last any
	for cur.Next(ctx) {
		var d bson.M
		must(cur.Decode(&d), "decode")
		if n == 0 {
			first = d["_id"]
		}
		last = d["_id"]
		n++
		switch v := d["i"].(type) {
		case int32:
			sum += int64(v)
		case int64:
			sum += v
		}
	}
	must(cur.Err(), "cursor")
	res["cursor_count"] = n
	res["cursor_sum"] = sum
	res["cursor_first"] = first
	res["cursor_last"] = last
	res["cursor_getmores"] = getMores.Load() - before

	// 15 MB document round trip
	big := bigString()
	bigc := db.Collection("big")
	_, err = bigc.InsertOne(ctx, bson.D{{Key: "_id", Value: "big"}, {Key: "data", Value: big}})
	must(err, "insert big")
	var bigDoc bson.M
	must(bigc.FindOne(ctx, bson.D{{Key: "_id", Value: "big"}}).Decode(&bigDoc), "find big")
	s, _ := bigDoc["data"].(string)
	res["big_len"] = len(s)
	res["big_equal"] = s == big

	// explicit session
	sess, err := client.StartSession()
	must(err, "startSession")
	lsidBefore := lsidCommands.Load()
	sc := db.Collection("sess")
	err = mongo.WithSession(ctx, sess, func(sctx context.Context) error {
		if _, err := sc.InsertOne(sctx, bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: "s"}}); err != nil {
			return err
		}
		var d bson.M
		if err := sc.FindOne(sctx, bson.D{{Key: "_id", Value: 1}}).Decode(&d); err != nil {
			return err
		}
		res["session_find"] = d["v"]
		return nil
	})
	must(err, "session ops")
	sess.EndSession(ctx)
	res["session_lsid_commands"] = lsidCommands.Load() - lsidBefore

	// error replies
	_, err = crud.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "name", Value: "dup"}})
	res["dup_code"] = errCode(err)
	err = db.RunCommand(ctx, bson.D{{Key: "noSuchCommandForShardscope", Value: 1}}).Err()
	res["unknown_cmd_code"] = errCode(err)

	out, err := json.Marshal(res)
	must(err, "json")
	fmt.Println(string(out))
}
