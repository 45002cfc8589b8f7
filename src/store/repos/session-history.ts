/**
 * A worker's cache of session histories (ARCHITECTURE "Performance budget": nothing on the hot path grows with
 * history). Events are immutable and a session's seq order is its commit order (seqs are taken under the session
 * row lock), so a cached prefix stays valid and a model call reads only the events after it. Bounded: the least
 * recently used sessions are dropped, and so are very long ones, so paused runs hold no worker memory.
 */
import type { Event } from '../../core/event.js';
import type { Db } from '../db/database.js';
import { listEvents } from './events.js';

/** Options of {@link SessionHistoryCache}. */
export interface SessionHistoryOptions {
  /** Sessions kept. Default 64. */
  maxSessions?: number;
  /** A session with more events than this is not kept. Default 10,000. */
  maxEvents?: number;
}

export class SessionHistoryCache {
  private readonly entries = new Map<string, { events: readonly Event[]; lastSeq: number }>();
  private readonly maxSessions: number;
  private readonly maxEvents: number;

  constructor(options: SessionHistoryOptions = {}) {
    this.maxSessions = options.maxSessions ?? 64;
    this.maxEvents = options.maxEvents ?? 10_000;
  }

  /** Every event of the session, in seq order: the cached prefix plus the events stored after it. */
  async read(db: Db, sessionId: string): Promise<readonly Event[]> {
    const cached = this.entries.get(sessionId);
    const fresh = await listEvents(db, sessionId, cached ? { afterSeq: cached.lastSeq } : {});
    // Callers never mutate the arrays handed out (typed readonly), so a cached one is shared as is.
    const events: readonly Event[] = cached ? [...cached.events, ...fresh] : fresh;
    const lastSeq = events.at(-1)?.seq ?? 0;
    const current = this.entries.get(sessionId);
    // Concurrent reads of one session: keep the longest prefix.
    if (!current || current.lastSeq <= lastSeq) {
      this.entries.delete(sessionId);
      if (events.length <= this.maxEvents) this.entries.set(sessionId, { events, lastSeq });
      if (this.entries.size > this.maxSessions) {
        this.entries.delete(this.entries.keys().next().value as string);
      }
    }
    return events;
  }

  /** Sessions held (for tests and metrics). */
  get size(): number {
    return this.entries.size;
  }
}
