// Types of ferrex-client.mjs. The request and answer types are generated from the schemas the
// server publishes at /api/v1/openapi.json (the MCP tools' input schemas, which the server checks
// exactly, and the answers' schemas); the client's own options and classes are written here.

// <generated> by `python -m tools.sdk_types` from the server's schemas; edit those.

/** Any answer's other fields (a later server may add some). */
export type Answer = Record<string, unknown>;

/** The store tool's arguments. */
export interface StoreArguments {
  content?: string;
  subject?: string;
  predicate?: string;
  object?: string;
  name?: string;
  steps?: string[];
  conditions?: string[];
  type?: MemoryType;
  /** What it is about (any spelling). */
  entities?: string[];
  /** Id of the memory this replaces. */
  supersedes?: string;
  /** Keeps other values too. Default: false. */
  multi_valued?: boolean;
  /** Keep a long event whole. Default: false. */
  split_long?: boolean;
  /** Origin; memory:ID cites a memory. */
  source?: string;
  context?: Record<string, unknown>;
  /** Default: 1.0. */
  confidence?: number;
  /** When it became true (ISO 8601, past). */
  valid_from?: string;
  /** Unset: private (this agent only); shared: every agent. */
  visibility?: Visibility;
  namespace?: string;
  /** Default: 0.5. */
  importance?: number;
  /** Never stale or evicted. Default: false. */
  pinned?: boolean;
  /** Forget it after N seconds, or 90s, 2h, 7d. */
  ttl?: number | string;
}

/** The recall tool's arguments besides the query. */
export interface RecallOptions {
  /** Default: 5. */
  limit?: number;
  types?: MemoryType[];
  /** Only memories about these (any spelling). */
  entities?: string[];
  /** Default: false. */
  include_stale?: boolean;
  /** Superseded too. Default: false. */
  include_invalidated?: boolean;
  /** What was valid then. */
  as_of?: string;
  after?: string;
  before?: string;
  /** Cut the answer to fit. */
  max_tokens?: number;
  /** Default: false. */
  explain?: boolean;
  namespace?: string;
  /** Favour meaning, words, recency or entities. Default: 'balanced'. */
  strategy?: "balanced" | "semantic" | "lexical" | "recent" | "relational";
  /** Unset: drop irrelevant; 0: keep all. */
  min_relevance?: number;
}

/** The query of GET /api/v1/memories (a page of memories). */
export interface ListOptions {
  /** next_cursor of the page before, unchanged. */
  cursor?: string;
  /** How many (50). */
  limit?: number;
  /**
   * By when stored (created) or when true (valid_from); - first: newest first (default -created).
   */
  sort?: "-created" | "created" | "-valid_from" | "valid_from";
  /** Only these kinds (repeated or comma-separated). */
  types?: MemoryType[];
  /** One namespace (default: every namespace). */
  namespace?: string;
  /** Only memories about this entity (any spelling). */
  entity?: string;
  /** Only memories with this source, exactly. */
  source?: string;
  /** Only private or only shared ones. */
  visibility?: Visibility;
  /** current (default): not superseded; superseded; or all. */
  state?: "current" | "superseded" | "all";
  /**
   * Event time at or after: ISO 8601 with a timezone (2024-05-01T09:00:00Z, +02:00), or a date
   * alone (00:00 UTC); a time without a timezone is refused.
   */
  after?: string;
  /**
   * Event time before: ISO 8601 with a timezone (2024-05-01T09:00:00Z, +02:00), or a date alone
   * (00:00 UTC); a time without a timezone is refused.
   */
  before?: string;
  /**
   * Only memories with this tag (a value of their context's tags list); repeated: every one of
   * them.
   */
  tag?: string[];
  /**
   * KEY:VALUE: only memories whose context's top-level KEY is VALUE or a list holding it; repeated:
   * every one of them.
   */
  context?: string[];
}

export type MemoryType = "episodic" | "semantic" | "procedural";

export type Visibility = "private" | "shared";

export interface Brief extends Answer {
  id: string;
  type: MemoryType;
  event_time: string;
  t_invalid: string | null;
  created_at: string;
  /** The memory on one line (at most 200 characters). */
  summary: string;
}

/** How many memories need attention, by reason. */
export interface AttentionCounts extends Answer {
  stale: number;
  aging: number;
  unvalidated: number;
  conflicts: number;
  possible_conflicts: number;
  forget_candidates: number;
}

export interface Conflict extends Answer {
  namespace: string;
  facts: Array<{
    id: string;
    object: string | null;
    subject?: string | null;
    predicate?: string | null;
  }>;
  /** A contradiction: the facts' subject. */
  subject?: string | null;
  /** A contradiction: the relation the facts share. */
  predicate?: string;
  /** A possible conflict: why the two facts may fill one slot. */
  reason?: string;
  /** A possible conflict: how to settle it. */
  what_to_do?: string;
}

export type Change =
  | "stored"
  | "superseded"
  | "forgotten"
  | "confirmed"
  | "marked"
  | "consolidated"
  | "unfolded";

export interface ChangedMemory extends Answer {
  id: string;
  change: Change;
}

export interface TagCount extends Answer {
  value: string;
  count: number;
}

export interface EntityMatch extends Answer {
  name: string;
  entity_id: string;
  /** exact, normalized, fuzzy, embedding, or new. */
  match: string;
  score: number;
  /** The known spelling it matched, if any. */
  matched: string | null;
}

export interface FlaggedFact extends Answer {
  id: string;
  fact: string;
  reason: string;
}

export interface SimilarMemory extends Answer {
  id: string;
  similarity: number;
  note: string;
  /** Why a near copy is no duplicate. */
  kept_because?: string;
}

export interface Redaction extends Answer {
  field: string;
  kind: string;
  /** The secret's character position in the field's text. */
  at: number;
}

export interface StoreAnswer extends Answer {
  /**
   * stored_as_history: stored already ended by a fact that began later (superseded_by,
   * history_reason).
   */
  status: "duplicate" | "stored" | "stored_as_history";
  /** The new memory, or for a repeated fact the existing one (re-validated). */
  id: string;
  /** Shown only when pinned. */
  pinned?: boolean;
  /** Shown only when not 0.5. */
  importance?: number;
  /** Shown only when it expires. */
  expires_at?: string;
  type?: MemoryType;
  namespace?: string;
  entities?: EntityMatch[];
  /** The memories this one ended. */
  superseded?: string[];
  /** The memories this store confirmed (a fact stored again). */
  validated?: string[];
  /** The journal position of what was written. */
  position?: number;
  /** A procedure's version number. */
  version?: number;
  /** stored_as_history: the fact that ends this one. */
  superseded_by?: string;
  /** stored_as_history: which fact is current, and since when. */
  history_reason?: string;
  /**
   * Answered from an earlier request with the same Idempotency-Key whose answer was lost: only the
   * id is known.
   */
  recovered?: boolean;
  /** What to know about this store, in words. */
  note?: string;
  /** Shown only when the fact was stored as one of several values. */
  multi_valued?: boolean;
  /** The multi-valued facts of the relation this one replaced. */
  replaced_multi_valued?: string[];
  /** Current facts that may fill the same slot with another value. */
  possible_conflict?: string[];
  /** Those facts, and why each was flagged. */
  possible_conflict_with?: FlaggedFact[];
  /** How to settle the first flagged fact. */
  possible_conflict_note?: string;
  /** Which current values this fact replaced. */
  replaced_note?: string;
  /** Facts of the relation kept beside this one (a plural relation). */
  kept_beside?: FlaggedFact[];
  /** Why this fact was kept beside the others. */
  plural_note?: string;
  /** The closest memory already stored, and how to replace it. */
  similar?: SimilarMemory;
  /** What the server warns about (the request was still served). */
  warnings?: string[];
  /** Secrets redacted from the stored text: where, and of what kind. */
  redacted?: Redaction[];
}

/** The store answer of one item, or its error (a refused or invalid item). */
export interface BatchItem extends Answer {
  index: number;
  /**
   * stored_as_history: stored already ended by a fact that began later (superseded_by,
   * history_reason).
   */
  status?: "duplicate" | "stored" | "stored_as_history";
  /** The new memory, or for a repeated fact the existing one (re-validated). */
  id?: string;
  /** Shown only when pinned. */
  pinned?: boolean;
  /** Shown only when not 0.5. */
  importance?: number;
  /** Shown only when it expires. */
  expires_at?: string;
  type?: MemoryType;
  namespace?: string;
  entities?: EntityMatch[];
  /** The memories this one ended. */
  superseded?: string[];
  /** The memories this store confirmed (a fact stored again). */
  validated?: string[];
  /** The journal position of what was written. */
  position?: number;
  /** A procedure's version number. */
  version?: number;
  /** stored_as_history: the fact that ends this one. */
  superseded_by?: string;
  /** stored_as_history: which fact is current, and since when. */
  history_reason?: string;
  /**
   * Answered from an earlier request with the same Idempotency-Key whose answer was lost: only the
   * id is known.
   */
  recovered?: boolean;
  /** What to know about this store, in words. */
  note?: string;
  /** Shown only when the fact was stored as one of several values. */
  multi_valued?: boolean;
  /** The multi-valued facts of the relation this one replaced. */
  replaced_multi_valued?: string[];
  /** Current facts that may fill the same slot with another value. */
  possible_conflict?: string[];
  /** Those facts, and why each was flagged. */
  possible_conflict_with?: FlaggedFact[];
  /** How to settle the first flagged fact. */
  possible_conflict_note?: string;
  /** Which current values this fact replaced. */
  replaced_note?: string;
  /** Facts of the relation kept beside this one (a plural relation). */
  kept_beside?: FlaggedFact[];
  /** Why this fact was kept beside the others. */
  plural_note?: string;
  /** The closest memory already stored, and how to replace it. */
  similar?: SimilarMemory;
  /** What the server warns about (the request was still served). */
  warnings?: string[];
  /** Secrets redacted from the stored text: where, and of what kind. */
  redacted?: Redaction[];
  error?: ErrorDocument;
}

export interface BatchAnswer extends Answer {
  results: BatchItem[];
  stored: number;
  failed: number;
}

/**
 * One memory found; its own fields are those of its type (content, or subject/predicate/object, or
 * name/version/steps/conditions).
 */
export interface RecallHit extends Answer {
  id: string;
  type: MemoryType;
  /** The fused ranking score (higher: better; not a probability). */
  score: number;
  entities: string[];
  event_time: string;
  /** How current the memory is: its label and staleness. */
  freshness: Record<string, unknown>;
  /** An episode's text, or a fact's note (null: none). */
  content?: string | null;
  /** A fact's subject. */
  subject?: string | null;
  /** A fact's relation. */
  predicate?: string | null;
  /** A fact's value. */
  object?: string | null;
  /** A procedure's name. */
  name?: string | null;
  steps?: string[];
  conditions?: string[];
  /** A procedure's version. */
  version?: number | null;
  /** A superseded result: the memory that ended it (null: ended without one). */
  superseded_by?: string | null;
  /** A fact: whether a current fact the caller sees disagrees. */
  contradiction?: boolean;
  /** The calibrated chance that the memory answers the query. */
  relevance?: number;
  /** relevance in words. */
  relevance_label?: "strong" | "weak" | "none";
  /** What the relevance was judged on. */
  relevance_evidence?: Record<string, unknown>;
  /** With explain: how it was scored. */
  explain?: Record<string, unknown>;
  /** Shown only when pinned. */
  pinned?: boolean;
  /** Shown only when not 0.5. */
  importance?: number;
  /** Shown only when it expires. */
  expires_at?: string;
  /** Those disagreeing facts. */
  contradicts?: string[];
  /** Current facts that may fill the same slot with another value. */
  possible_conflict?: string[];
  /** A consolidation summary: what it stands for, in words. */
  summary_of?: string;
  /** A superseded result (include_invalidated): when it ended. */
  invalidated_at?: string;
  /** With explain: the relevance model's own estimate. */
  answer_chance?: number;
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
  /** The memories confirmed. */
  validated: string[];
  /** The ids not found (or not visible to the caller). */
  not_found: string[];
  /** The journal position of what was written (null: nothing was). */
  position: number | null;
  /** With importance or pinned: the memories marked. */
  marked?: string[];
  /** What the server warns about (the request was still served). */
  warnings?: string[];
  /** With differs_from: the pairs of memories now told apart. */
  differ?: Array<string[]>;
  /** With supersedes: the memories the confirmed one ended. */
  superseded?: string[];
}

export interface ForgetAnswer extends Answer {
  /** The memories forgotten. */
  forgotten: string[];
  /** The ids not found (or not visible to the caller). */
  not_found: string[];
  /** Entities no memory names any more, dropped with them. */
  dropped_entities: string[];
  /** The journal position of what was written (null: nothing was). */
  position: number | null;
  /** The memories a forgotten one had replaced, valid again. */
  current_again?: Array<{ id: string; replaced_by: string; note: string }>;
  /** What the server warns about (the request was still served). */
  warnings?: string[];
}

export interface ListedMemory extends Answer {
  id: string;
  type: MemoryType;
  event_time: string;
  t_invalid: string | null;
  created_at: string;
  /** The memory on one line (at most 200 characters). */
  summary: string;
  namespace: string;
  visibility: Visibility;
  source: string | null;
  superseded_by: string | null;
}

export interface MemoryPage extends Answer {
  memories: ListedMemory[];
  /** Pass as cursor for the next page; null: the last. */
  next_cursor: string | null;
}

export interface MemoryDetail extends Answer {
  id: string;
  type: MemoryType;
  event_time: string;
  t_invalid: string | null;
  created_at: string;
  /** The memory on one line (at most 200 characters). */
  summary: string;
  namespace: string;
  visibility: Visibility;
  entities: string[];
  /** The memory's own fields, those it has. */
  body: Record<string, unknown>;
  confidence: number;
  access_count: number;
  last_accessed: string | null;
  last_validated: string | null;
  history: Array<{
    id: string;
    t_valid: string;
    t_invalid: string | null;
    summary: string;
  }>;
  /** Shown only when pinned. */
  pinned?: boolean;
  /** Shown only when not 0.5. */
  importance?: number;
  /** Shown only when it expires. */
  expires_at?: string;
}

export interface MemoryVersion extends Answer {
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

/** The entity names the caller may see (no name given). */
export interface EntityNames extends Answer {
  namespace: string;
  prefix: string;
  names: string[];
  offset: number;
  total: number;
}

/** One entity (name given): its spellings, memories and neighbours. */
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

export interface Stats extends Answer {
  /** The namespace read (null: every namespace, the operator with none given). */
  namespace: string | null;
  total: number;
  recent: Array<{ id: string; type: MemoryType; summary: string }>;
  /** How many memories need attention, by reason. */
  needs_attention: AttentionCounts;
  expiring: number;
  /** Memories by type (detailed stats: what the HTTP API always asks). */
  by_type?: Record<string, number>;
  /** Memories by freshness label (detailed stats). */
  staleness?: Record<string, number>;
  conflicts?: Conflict[];
  possible_conflicts?: Conflict[];
  /** How many entities (detailed stats). */
  entities?: number;
  /** The journal's size and position (the operator only). */
  journal?: Record<string, unknown>;
  /** The storage sizes (the operator only). */
  storage_bytes?: Record<string, number>;
  /** The embedding and relevance models in use. */
  models?: Record<string, unknown>;
}

export interface Reflect extends Answer {
  /** The namespace read (null: every namespace, the operator with none given). */
  namespace: string | null;
  /** How many memories need attention, by reason. */
  counts: AttentionCounts;
  stale: Array<{
    id: string;
    summary: string;
    staleness: number;
    reasons: string[];
  }>;
  unvalidated: Array<{ id: string; summary: string; age_days: number }>;
  contradictions: Conflict[];
  possible_conflicts: Conflict[];
  forget_candidates: Array<{
    id: string;
    summary: string;
    access_count: number;
    last_accessed: string | null;
    label: string;
    /** Why the memory may be evicted (null: not eligible). */
    eviction: "superseded_past_retention" | "stale_unreferenced_episodic" | "stale_episodic" | null;
  }>;
  dormant_entities: Array<{
    id: string;
    name: string;
    /** When a memory last named it (null: never). */
    last_referenced: string | null;
  }>;
}

/** The values of one context key (tags), most held first. */
export interface TagCounts extends Answer {
  key: string;
  tags: TagCount[];
  more: boolean;
}

/** The data of one `change` event of the change stream (its id: position). */
export interface ChangeEvent extends Answer {
  position: number;
  recorded_at: string;
  memories: ChangedMemory[];
}

export interface ErrorDocument extends Answer {
  /** The family of the error. */
  kind:
    | "BackendUnavailable"
    | "FerrexError"
    | "Forbidden"
    | "JournalFailure"
    | "KeyReused"
    | "ModelUnavailable"
    | "ReadOnlyHome"
    | "Refused"
    | "StorageFull"
    | "TooManyStreams"
    | "Unauthorized"
    | "UsageError";
  /** Stable; see the table. */
  code:
    | "already_superseded"
    | "backend_unavailable"
    | "busy"
    | "conflict_ambiguous"
    | "duplicate"
    | "error"
    | "export_ahead"
    | "export_dirty"
    | "export_diverged"
    | "export_foreign"
    | "export_invalid"
    | "export_target"
    | "forbidden"
    | "git_failed"
    | "git_unavailable"
    | "hello_refused"
    | "idempotency_key_reused"
    | "internal"
    | "invalid_input"
    | "journal"
    | "journal.connect"
    | "journal.damaged"
    | "journal.encode"
    | "journal.error"
    | "journal.format"
    | "journal.too_new"
    | "journal.unavailable"
    | "method_not_allowed"
    | "model_bad_response"
    | "model_mismatch"
    | "model_unauthorized"
    | "model_unavailable"
    | "no_home"
    | "not_found"
    | "read_only"
    | "refused"
    | "secret_refused"
    | "storage_full"
    | "too_many_streams"
    | "unauthorized"
    | "version_mismatch";
  message: string;
  /** What to do about it. */
  hint?: string | null;
}

// </generated>

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
