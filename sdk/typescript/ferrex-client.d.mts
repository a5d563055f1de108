// Types of ferrex-client.mjs. The argument types follow the MCP tools' input schemas, which
// the server publishes at /api/v1/openapi.json (the server checks them exactly).

export type MemoryType = "episodic" | "semantic" | "procedural";

/** The store tool's arguments: content (an event), subject/predicate/object (a fact), or
 * name/steps (a procedure). */
export interface StoreArguments {
  content?: string;
  subject?: string;
  predicate?: string;
  object?: string;
  name?: string;
  steps?: string[];
  conditions?: string[];
  type?: MemoryType;
  entities?: string[];
  supersedes?: string;
  multi_valued?: boolean;
  split_long?: boolean;
  source?: string;
  context?: Record<string, unknown>;
  confidence?: number;
  valid_from?: string;
  visibility?: "private" | "shared";
  namespace?: string;
  importance?: number;
  pinned?: boolean;
  ttl?: number | string;
}

/** The recall tool's arguments besides the query. */
export interface RecallOptions {
  limit?: number;
  types?: MemoryType[];
  entities?: string[];
  include_stale?: boolean;
  include_invalidated?: boolean;
  as_of?: string;
  after?: string;
  before?: string;
  max_tokens?: number;
  explain?: boolean;
  namespace?: string;
  strategy?: "balanced" | "semantic" | "lexical" | "recent" | "relational";
  min_relevance?: number;
}

export interface WriteOptions {
  /** Sent as Idempotency-Key (default: a random UUID per call, the same on each retry). */
  idempotencyKey?: string;
}

export interface ClientOptions {
  /** Milliseconds before one attempt is abandoned (60000). */
  timeout?: number;
  /** Attempts after the first when the connection fails or the server answers 503 (2). */
  retries?: number;
  /** Milliseconds before the first retry, doubled each time (500). */
  backoff?: number;
  /** Another fetch implementation (the global one by default). */
  fetch?: typeof fetch;
  /** Send the token over plain http:// to a host that is not this machine (false). */
  allowInsecureHttp?: boolean;
}

/** Any answer's other fields (a later server may add some). */
export type Answer = Record<string, unknown>;

export interface StoreAnswer extends Answer {
  status: string;
  id: string;
  type?: MemoryType;
  namespace?: string;
  entities?: unknown[];
  superseded?: string[];
  validated?: string[];
  position?: number;
  version?: number;
  superseded_by?: string;
  history_reason?: string;
  /** Answered from an earlier request with the same Idempotency-Key whose answer was lost. */
  recovered?: boolean;
}

export interface BatchAnswer extends Answer {
  /** One per memory, in order: the store answer, or {index, error} for a refused one. */
  results: Array<(StoreAnswer & { index: number }) | { index: number; error: ErrorDocument }>;
  stored: number;
  failed: number;
}

export interface RecallHit extends Answer {
  id: string;
  type: MemoryType;
  score: number;
  entities: string[];
  event_time: string;
  content?: string;
  subject?: string;
  predicate?: string;
  object?: string;
  name?: string;
  steps?: string[];
  relevance?: number;
  relevance_label?: string;
  explain?: Record<string, unknown>;
}

export interface RecallAnswer extends Answer {
  query: string;
  namespace: string;
  results: RecallHit[];
  hidden: Record<string, number>;
  unknown_entities: string[];
  reranker: string;
  nothing_relevant: boolean;
  note?: string;
  warning?: string;
  truncated?: { max_tokens: number; omitted: number };
}

export interface ConfirmAnswer extends Answer {
  validated: string[];
  not_found: string[];
  marked?: string[];
  position?: number;
}

export interface ForgetAnswer extends Answer {
  forgotten: string[];
  not_found: string[];
  dropped_entities: unknown[];
  position?: number;
}

export interface ListOptions {
  cursor?: string;
  limit?: number;
  sort?: "-created" | "created" | "-valid_from" | "valid_from";
  types?: MemoryType[];
  namespace?: string;
  entity?: string;
  source?: string;
  visibility?: "private" | "shared";
  state?: "current" | "superseded" | "all";
  after?: string;
  before?: string;
  /** Memories holding every one of these in their context's tags. */
  tag?: string[];
  /** KEY:VALUE, each: the context's top-level KEY is VALUE or a list holding it. */
  context?: string[];
}

/** A memory as lists show it. */
export interface Brief {
  id: string;
  type: MemoryType;
  event_time: string;
  t_invalid: string | null;
  created_at: string;
  summary: string;
}

export interface ListedMemory extends Brief {
  namespace: string;
  visibility: "private" | "shared";
  source: string | null;
  superseded_by: string | null;
}

export interface MemoryPage extends Answer {
  memories: ListedMemory[];
  next_cursor: string | null;
}

export interface MemoryDetail extends Brief, Answer {
  namespace: string;
  visibility: "private" | "shared";
  entities: string[];
  body: Record<string, unknown>;
  confidence: number;
  access_count: number;
  last_accessed: string | null;
  last_validated: string | null;
  history: Array<{ id: string; t_valid: string; t_invalid: string | null; summary: string }>;
  pinned?: boolean;
  importance?: number;
  expires_at?: string;
}

export interface MemoryVersion {
  id: string;
  type: MemoryType;
  summary: string;
  t_valid: string;
  t_invalid: string | null;
  created_at: string;
  superseded_by: string | null;
  confidence: number;
  access_count: number;
  last_accessed: string | null;
  last_validated: string | null;
  position: number;
  current: boolean;
}

export interface History extends Answer {
  id: string;
  versions: MemoryVersion[];
}

export interface EntityNames extends Answer {
  namespace: string;
  prefix: string;
  names: string[];
  offset: number;
  total: number;
}

export interface Entity extends Answer {
  namespace: string;
  name: string;
  aliases: Array<{ alias: string; match: string; score: number }>;
  memories: Brief[];
  offset: number;
  more: boolean;
  graph: {
    memories_read: number;
    nodes: Array<{ name: string; count: number }>;
    edges: Array<{ a: string; b: string; count: number }>;
  };
}

export interface AttentionCounts {
  stale: number;
  aging: number;
  unvalidated: number;
  conflicts: number;
  possible_conflicts: number;
  forget_candidates: number;
}

export interface Stats extends Answer {
  namespace: string;
  total: number;
  recent: Array<{ id: string; type: MemoryType; summary: string }>;
  needs_attention: AttentionCounts;
  expiring: number;
  by_type: Record<string, number>;
  staleness?: Record<string, number>;
  entities?: number;
}

export interface Reflect extends Answer {
  namespace: string;
  counts: AttentionCounts;
  stale: Array<{ id: string; summary: string; staleness: number; reasons: string[] }>;
  unvalidated: Array<{ id: string; summary: string; age_days: number }>;
  contradictions: Answer[];
  possible_conflicts: Answer[];
  forget_candidates: Array<{ id: string; summary: string; access_count: number; label: string }>;
  dormant_entities: Array<{ id: string; name: string; last_referenced?: string | null }>;
}

export interface TagCounts extends Answer {
  key: string;
  tags: Array<{ value: string; count: number }>;
  more: boolean;
}

export type Change =
  | "stored" | "superseded" | "forgotten" | "confirmed" | "marked" | "consolidated" | "unfolded";

/** One record of the change stream (its journal position is the event's id). */
export interface ChangeEvent {
  position: number;
  recorded_at: string;
  memories: Array<{ id: string; change: Change }>;
}

export interface ChangesOptions {
  /** From this journal position (default: from now on). */
  after?: number;
  /** End once caught up. */
  untilIdle?: boolean;
  /** Reconnect after a lost connection from the last position read (true; never with
   * untilIdle). */
  reconnect?: boolean;
  /** Aborting it ends the stream. */
  signal?: AbortSignal;
}

export interface ErrorDocument {
  code: string;
  message: string;
  hint?: string | null;
  [detail: string]: unknown;
}

/** An error answer of the server, or a connection that kept failing
 * (code "connection_failed", status null). */
export class FerrexError extends Error {
  constructor(
    code: string,
    message: string,
    hint?: string | null,
    status?: number | null,
    details?: Record<string, unknown>,
  );
  readonly code: string;
  readonly hint: string | null;
  readonly status: number | null;
  /** The error's other fields (ids involved, similarity, fields at fault, ...). */
  readonly details: Record<string, unknown>;
}

export class Client {
  /** url: http://host:port; token: a bearer token (null for an open loopback server).
   * Throws FerrexError "bad_url", "bad_token" (a control character in the token) or
   * "insecure_url" (a token over plain http:// to another machine). No redirect is followed. */
  constructor(url: string, token?: string | null, options?: ClientOptions);
  readonly url: string;
  store(memory: string | StoreArguments, options?: WriteOptions): Promise<StoreAnswer>;
  /** At most 100 memories; a refused or invalid one does not stop the others. */
  storeMany(memories: StoreArguments[], options?: WriteOptions): Promise<BatchAnswer>;
  recall(query: string, options?: RecallOptions): Promise<RecallAnswer>;
  forget(id: string, options?: WriteOptions & { cascade?: boolean }): Promise<ForgetAnswer>;
  confirm(
    ids: string[],
    options?: WriteOptions & { pinned?: boolean; importance?: number },
  ): Promise<ConfirmAnswer>;
  stats(options?: { namespace?: string }): Promise<Stats>;
  reflect(options?: { namespace?: string; limit?: number }): Promise<Reflect>;
  list(options?: ListOptions): Promise<MemoryPage>;
  memory(id: string): Promise<MemoryDetail>;
  history(id: string): Promise<History>;
  entities(options?: { prefix?: string; offset?: number }): Promise<EntityNames>;
  entity(name: string, options?: { offset?: number }): Promise<Entity>;
  tags(options?: {
    key?: string;
    namespace?: string;
    state?: "current" | "superseded" | "all";
    limit?: number;
  }): Promise<TagCounts>;
  /** The change stream, as an async iterator of change events. */
  changes(options?: ChangesOptions): AsyncGenerator<ChangeEvent, void, undefined>;
}
