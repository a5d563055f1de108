// Compiled (never run) by .ci/run with `tsc --noEmit --strict`: the declarations in
// ferrex-client.d.mts describe the client as a TypeScript program uses it.
import {
  Client,
  FerrexError,
  type BatchAnswer,
  type ChangeEvent,
  type Entity,
  type EntityNames,
  type History,
  type MemoryDetail,
  type MemoryPage,
  type RecallAnswer,
  type Reflect,
  type Stats,
  type StoreAnswer,
  type StoreArguments,
  type TagCounts,
} from "./ferrex-client.mjs";

export async function example(url: string, token: string): Promise<string[]> {
  const client = new Client(url, token, { timeout: 10_000, retries: 1 });
  const fact: StoreArguments = { subject: "api-server", predicate: "uses", object: "tokio 1.38" };
  const stored: StoreAnswer = await client.store(fact, { idempotencyKey: "key-1" });
  await client.store("On 2026-11-02 Ana deployed api-server v2.3");
  const batch: BatchAnswer = await client.storeMany([fact, { content: "an event" }]);
  const found: RecallAnswer = await client.recall("what does api-server use?", {
    limit: 3,
    strategy: "lexical",
    entities: ["api-server"],
  });
  await client.confirm([stored.id], { pinned: true, importance: 0.8 });
  await client.forget(stored.id, { cascade: true });
  const page: MemoryPage = await client.list({ types: ["semantic"], limit: 20, sort: "created" });
  if (page.next_cursor !== null) await client.list({ cursor: page.next_cursor });
  const reflected: Reflect = await client.reflect({ limit: 3 });
  const versions: History = await client.history(stored.id);
  const current: boolean = versions.versions[0].current;
  const names: EntityNames = await client.entities({ prefix: "api" });
  const entity: Entity = await client.entity(names.names[0], { offset: 0 });
  const detail: MemoryDetail = await client.memory(entity.memories[0].id);
  const tags: TagCounts = await client.tags({ key: "tags", limit: 10 });
  const tagged: MemoryPage = await client.list({ tag: [tags.tags[0].value], context: ["a:b"] });
  const counted: Stats = await client.stats();
  for await (const change of client.changes({ after: 0, untilIdle: true })) {
    const event: ChangeEvent = change;
    if (event.memories.some((m) => m.change === "forgotten")) break;
  }
  void [reflected.counts.stale, current, detail.body, tagged.next_cursor, counted.total];
  try {
    await client.stats({ namespace: "default" });
  } catch (error) {
    if (error instanceof FerrexError) {
      const where: number | null = error.status;
      return [error.code, error.message, error.hint ?? "", String(where)];
    }
    throw error;
  }
  return [String(batch.stored), ...found.results.map((r) => r.id)];
}
