// Driver scenario for the shardscope integration suite (Node driver).
// Usage: node scenario.js URI [DBNAME]
// Prints one JSON object with the results to stdout; the tests run it directly
// against the upstream and through the proxy and compare the outputs.
'use strict';
const { MongoClient } = require('mongodb');

const BULK_COUNT = 1500;
const CURSOR_BATCH = 100;
const BIG_SIZE = 15 * 1024 * 1024;

function bigString() {
  // Same character sequence as the other drivers: alphabet[i % 36].
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const chunk = alphabet.repeat(1024); // a multiple of 36 characters
  const parts = [];
  let len = 0;
  while (len + chunk.length <= BIG_SIZE) { parts.push(chunk); len += chunk.length; }
  let rest = '';
  for (let i = len; i < BIG_SIZE; i++) rest += alphabet[i % alphabet.length];
  parts.push(rest);
  return parts.join('');
}

function errCode(err) {
  if (!err) return 0;
  if (typeof err.code === 'number') return err.code;
  if (err.writeErrors && err.writeErrors.length) return err.writeErrors[0].code;
  return -1;
}

async function main() {
  const uri = process.argv[2];
  const dbName = process.argv[3] || 'scenario_node';
  if (!uri) { console.error('usage: node scenario.js URI [DBNAME]'); process.exit(2); }
  const client = new MongoClient(uri, { monitorCommands: true, serverSelectionTimeoutMS: 20000 });
  let getMores = 0;
  let lsidCommands = 0;
  client.on('commandStarted', (e) => {
    if (e.commandName === 'getMore') getMores++;
    if (e.command && e.command.lsid) lsidCommands++;
  });
  await client.connect();
  const res = { driver: 'node' };
  const db = client.db(dbName);
  try { await db.dropDatabase(); } catch (e) { /* ignore */ }

  const ping = await db.command({ ping: 1 });
  res.ping_ok = ping.ok;

  // CRUD
  const crud = db.collection('crud');
  await crud.insertOne({ _id: 1, name: 'alpha', n: 1 });
  await crud.insertMany([{ _id: 2, name: 'beta', n: 2 }, { _id: 3, name: 'gamma', n: 3 }]);
  const one = await crud.findOne({ _id: 1 });
  res.find_one_name = one.name;
  const ur = await crud.updateOne({ _id: 1 }, { $set: { n: 10 } });
  res.update_matched = ur.matchedCount;
  res.update_modified = ur.modifiedCount;
  const rr = await crud.replaceOne({ _id: 3 }, { name: 'gamma2', n: 30 });
  res.replace_modified = rr.modifiedCount;
  const dr = await crud.deleteOne({ _id: 2 });
  res.delete_count = dr.deletedCount;
  const crudDocs = await crud.find({}).sort({ _id: 1 }).toArray();
  res.crud_docs = crudDocs.map((d) => `${d._id}:${d.name}:${d.n}`);
  res.crud_count = await crud.countDocuments({});

  // bulk (OP_MSG document sequence)
  const bulk = db.collection('bulk');
  const many = [];
  for (let i = 0; i < BULK_COUNT; i++) many.push({ _id: 100000 + i, i, tag: `t${i % 7}` });
  const ir = await bulk.insertMany(many);
  res.bulk_inserted = ir.insertedCount;
  const bw = await bulk.bulkWrite([
    { insertOne: { document: { _id: 1, i: -1 } } },
    { updateMany: { filter: { tag: 't3' }, update: { $set: { flag: true } } } },
    { deleteMany: { filter: { tag: 't5' } } },
  ]);
  res.bulkwrite = [bw.insertedCount, bw.matchedCount, bw.modifiedCount, bw.deletedCount];

  // cursor over several getMore batches
  const before = getMores;
  const cur = bulk.find({}).sort({ _id: 1 }).batchSize(CURSOR_BATCH);
  let n = 0, sum = 0, first = null, last = null;
  for await (const d of cur) {
    if (n === 0) first = d._id;
    last = d._id;
    n++;
    sum += d.i;
  }
  res.cursor_count = n;
  res.cursor_sum = sum;
  res.cursor_first = first;
  res.cursor_last = last;
  res.cursor_getmores = getMores - before;

  // 15 MB document round trip
  const big = bigString();
  const bigc = db.collection('big');
  await bigc.insertOne({ _id: 'big', data: big });
  const bigDoc = await bigc.findOne({ _id: 'big' });
  res.big_len = bigDoc.data.length;
  res.big_equal = bigDoc.data === big;

  // explicit session
  const session = client.startSession();
  const lsidBefore = lsidCommands;
  try {
    const sc = db.collection('sess');
    await sc.insertOne({ _id: 1, v: 's' }, { session });
    const d = await sc.findOne({ _id: 1 }, { session });
    res.session_find = d.v;
  } finally {
    await session.endSession();
  }
  res.session_lsid_commands = lsidCommands - lsidBefore;

  // error replies
  try { await crud.insertOne({ _id: 1, name: 'dup' }); res.dup_code = 0; } catch (e) { res.dup_code = errCode(e); }
  try { await db.command({ noSuchCommandForShardscope: 1 }); res.unknown_cmd_code = 0; } catch (e) { res.unknown_cmd_code = errCode(e); }

  await client.close();
  process.stdout.write(JSON.stringify(res) + '\n');
}

main().catch((e) => { console.error(e && e.stack ? e.stack : e); process.exit(1); });
