// The TypeScript client against a running ferrex (started by tests/e2e/test_sdk_typescript.py,
// which passes its address and tokens in the environment). Run: node --test test/
import assert from "node:assert/strict";
import net from "node:net";
import { test } from "node:test";

import { Client, FerrexError } from "../ferrex-client.mjs";

const URL = process.env.FERREX_URL;
const ALICE = process.env.FERREX_TOKEN;
const BOB = process.env.FERREX_TOKEN_BOB;
const OPERATOR = process.env.FERREX_OPERATOR_TOKEN;
assert.ok(URL && ALICE && BOB && OPERATOR, "FERREX_URL and the FERREX_*TOKEN* variables are needed");

const alice = new Client(URL, ALICE);
const bob = new Client(URL, BOB);
const operator = new Client(URL, OPERATOR);

async function refused(promise) {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof FerrexError, String(error));
    return error;
  }
  assert.fail("expected a FerrexError");
}

test("store, recall, confirm, forget, stats", async () => {
  const stored = await alice.store({
    content: "On 2026-10-20 Mateo moved the search index to cluster blue-3",
    entities: ["Mateo", "search index"],
    visibility: "shared",
  });
  assert.equal(stored.status, "stored");
  assert.match(stored.id, /^mem_/);
  const plain = await alice.store("Plain text: the build cache lives on Kestrel-Two");
  assert.equal(plain.type, "episodic");
  const found = await alice.recall("where is the search index?", { limit: 3 });
  assert.equal(found.results[0].id, stored.id);
  const confirmed = await alice.confirm([stored.id], { pinned: true });
  assert.deepEqual(confirmed.validated, [stored.id]);
  assert.equal((await alice.memory(stored.id)).pinned, true);
  const before = (await operator.stats()).total;
  const forgotten = await alice.forget(plain.id, { cascade: true });
  assert.deepEqual(forgotten.forgotten, [plain.id]);
  assert.equal((await operator.stats()).total, before - 1);
});

test("errors carry code, message, hint and status", async () => {
  const typo = await refused(alice.store({ contnt: "a typo" }));
  assert.equal(typo.code, "invalid_input");
  assert.equal(typo.status, 400);
  assert.match(typo.message, /contnt/);
  assert.match(typo.hint, /content/);
  assert.deepEqual(typo.details.fields, ["contnt"]);
  const wrongType = await refused(alice.recall("x", { limit: "5" }));
  assert.equal(wrongType.code, "invalid_input");
  const nobody = await refused(new Client(URL, "wrong-token").stats());
  assert.equal(nobody.code, "unauthorized");
  assert.equal(nobody.status, 401);
  const missing = await refused(alice.forget("mem_00000000000000000000000000"));
  assert.equal(missing.code, "not_found");
  assert.equal(missing.status, 404);
  const first = await alice.store({ content: "The on-call handover is at 09:30", visibility: "shared" });
  const dup = await refused(alice.store({ content: "The on-call handover is at 09:30", visibility: "shared" }));
  assert.equal(dup.code, "duplicate");
  assert.equal(dup.status, 409);
  assert.deepEqual(dup.details.ids, [first.id]);
});

test("storeMany reports each item, a bad one does not stop the others", async () => {
  const doc = await alice.storeMany([
    { content: "Batch TS: the VPN certificates renew in March" },
    { content: 42 },
    { subject: "vpn-gateway", predicate: "runs", object: "WireGuard" },
  ]);
  assert.equal(doc.stored, 2);
  assert.equal(doc.failed, 1);
  assert.equal(doc.results[1].error.code, "invalid_input");
  assert.equal(doc.results[2].type, "semantic");
});

test("another agent neither sees nor forgets a private memory", async () => {
  const secret = await alice.store("Alice only: the Narwhal-Six deploy key is in vault 9");
  const mine = (await alice.recall("Narwhal-Six deploy key")).results.map((r) => r.id);
  const bobs = (await bob.recall("Narwhal-Six deploy key")).results.map((r) => r.id);
  assert.ok(mine.includes(secret.id));
  assert.ok(!bobs.includes(secret.id));
  const error = await refused(bob.forget(secret.id));
  assert.equal(error.code, "not_found");
  assert.equal((await alice.memory(secret.id)).id, secret.id);
});

test("a write whose answer was lost is retried with the same key and stored once", async () => {
  const keys = [];
  let calls = 0;
  const losing = async (url, init) => {
    keys.push(init.headers["Idempotency-Key"]);
    const response = await fetch(url, init);
    calls += 1;
    if (calls === 1) {
      await response.text();
      throw new TypeError("fetch failed (the answer was lost)"); // the write was done
    }
    return response;
  };
  const before = (await operator.stats()).total;
  const client = new Client(URL, ALICE, { fetch: losing, backoff: 0 });
  const stored = await client.store({ content: "Retried TS: log retention is 30 days", visibility: "shared" });
  assert.equal(stored.status, "stored");
  assert.equal(keys.length, 2);
  assert.ok(keys[0]);
  assert.equal(keys[0], keys[1]);
  assert.equal((await operator.stats()).total, before + 1);
});

test("an unreachable server is a connection failure", async () => {
  const port = await new Promise((resolve) => {
    const server = net.createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
  const error = await refused(new Client(`http://127.0.0.1:${port}`, "t", { retries: 1, backoff: 0 }).stats());
  assert.equal(error.code, "connection_failed");
  assert.equal(error.status, null);
});

test("list pages with a cursor and reflect", async () => {
  const ids = new Set();
  for (let i = 0; i < 5; i++) {
    const stored = await alice.store({ content: `TS listing note ${i}: shard-${i} rebalanced`,
                                       visibility: "shared", source: "ts-list" });
    ids.add(stored.id);
  }
  const hidden = await alice.store({ content: "TS listing note: alice's own", source: "ts-list" });
  const seen = [];
  let cursor;
  do {
    const page = await bob.list({ source: "ts-list", limit: 2, types: ["episodic"], cursor });
    assert.ok(page.memories.length <= 2);
    seen.push(...page.memories.map((m) => m.id));
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  assert.deepEqual(new Set(seen), ids);
  assert.equal(seen.length, 5);
  assert.ok(!seen.includes(hidden.id));
  const bad = await refused(bob.list({ sort: "size" }));
  assert.equal(bad.code, "invalid_input");
  const reflected = await bob.reflect({ limit: 1 });
  assert.ok("counts" in reflected && reflected.unvalidated.length <= 1);
});

test("history, entities, tags, stats and the change stream", async () => {
  const fact = {
    subject: "tern-cache", predicate: "runs on", visibility: "shared",
    entities: ["tern-cache"], context: { tags: ["ts-tagged"] },
  };
  const old = await alice.store({ ...fact, object: "redis 7.0" });
  const current = await alice.store({ ...fact, object: "redis 7.2" });
  const secret = await alice.store({
    content: "Alice only: tern-cache's admin password moved", context: { tags: ["ts-tagged"] },
  });
  const history = await alice.history(current.id);
  assert.deepEqual(history.versions.map((v) => [v.id, v.current]), [[old.id, false], [current.id, true]]);
  assert.ok((await bob.entities({ prefix: "tern" })).names.includes("tern-cache"));
  assert.equal((await bob.entity("tern-cache")).memories[0].id, current.id);
  assert.deepEqual((await bob.tags()).tags.find((t) => t.value === "ts-tagged"), { value: "ts-tagged", count: 1 });
  assert.deepEqual((await alice.tags()).tags.find((t) => t.value === "ts-tagged"), { value: "ts-tagged", count: 2 });
  assert.deepEqual((await bob.list({ tag: ["ts-tagged"] })).memories.map((m) => m.id), [current.id]);
  assert.ok((await bob.stats()).total >= 1);
  // From the start, until caught up: bob hears of the shared facts, never of alice's private one.
  const heard = [];
  let last = 0;
  for await (const change of bob.changes({ after: 0, untilIdle: true })) {
    for (const m of change.memories) heard.push(`${m.id} ${m.change}`);
    last = change.position;
  }
  assert.ok(heard.includes(`${old.id} stored`) && heard.includes(`${current.id} stored`));
  assert.ok(heard.includes(`${old.id} superseded`));
  assert.ok(!heard.some((h) => h.startsWith(secret.id)));
  // Live, resumed after the last event bob heard: a store made while the stream is open
  // arrives (and nothing of alice's private one before it); return() ends the stream.
  const stream = bob.changes({ after: last });
  const next = stream.next();
  const live = await alice.store({ content: "Shared: the tern-cache maintenance is on Fridays", visibility: "shared" });
  const event = (await next).value;
  assert.deepEqual(event.memories, [{ id: live.id, change: "stored" }]);
  await stream.return();
  const bad = await refused(bob.changes({ after: -1 }).next());
  assert.equal(bad.code, "invalid_input");
});
