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

/** A tool's answer, as the MCP tool gives it. */
export type Answer = Record<string, unknown>;

export interface StoreAnswer extends Answer {
  status: string;
  id: string;
  type: MemoryType;
  namespace: string;
}

export interface BatchAnswer extends Answer {
  /** One per memory, in order: the store answer, or {index, error} for a refused one. */
  results: Array<(StoreAnswer & { index: number }) | { index: number; error: ErrorDocument }>;
  stored: number;
  failed: number;
}

export interface RecallAnswer extends Answer {
  query: string;
  results: Array<Answer & { id: string; type: MemoryType; score: number }>;
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
}

export interface ListedMemory {
  id: string;
  type: MemoryType;
  namespace: string;
  visibility: "private" | "shared";
  summary: string;
  source: string | null;
  event_time: string;
  created_at: string;
  t_invalid: string | null;
  superseded_by: string | null;
}

export interface MemoryPage extends Answer {
  memories: ListedMemory[];
  next_cursor: string | null;
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
  forget(id: string, options?: WriteOptions & { cascade?: boolean }): Promise<Answer>;
  confirm(
    ids: string[],
    options?: WriteOptions & { pinned?: boolean; importance?: number },
  ): Promise<Answer>;
  stats(options?: { namespace?: string }): Promise<Answer>;
  reflect(options?: { namespace?: string; limit?: number }): Promise<Answer>;
  list(options?: ListOptions): Promise<MemoryPage>;
  memory(id: string): Promise<Answer>;
}
