/**
 * The Store: one open database plus the repository functions bound to it, and a single LISTEN connection
 * that fans event notifications out to in-process followers.
 */
import { EventEmitter } from 'node:events';
import type { Event } from '../core/event.js';
import {
  openDatabase,
  type Database,
  type DatabaseTarget,
  type Db,
  type OpenDatabaseOptions,
} from './db/database.js';
import {
  EVENTS_CHANNEL,
  appendEvent,
  listEvents,
  type AppendEventInput,
  type EventNotice,
  type ListEventsOptions,
} from './repos/events.js';
import { migrate } from './db/migrate.js';
import {
  createSessionTx,
  deleteSessionTx,
  getSession,
  listSessions,
  markFollowed,
  FOLLOW_TTL_MS,
  readInvocationState,
  type CreateSessionInput,
  type ListSessionsOptions,
  type SessionRecord,
} from './repos/sessions.js';
import { SessionHistoryCache } from './repos/session-history.js';
import { inTransaction } from './db/tx.js';

/** Options of {@link Store.open}. */
export interface StoreOpenOptions extends OpenDatabaseOptions {
  /** Apply migrations on open. Default true. */
  migrate?: boolean;
}

/** Sessions, events and state over PostgreSQL or PGlite. */
export class Store {
  private readonly notices = new EventEmitter();
  private unlisten: (() => Promise<void>) | undefined;
  private listening: Promise<void> | undefined;
  private readonly histories = new SessionHistoryCache();
  /** Sessions followed in this process, with how many followers each. */
  private readonly followed = new Map<string, number>();
  private renewal: NodeJS.Timeout | undefined;

  private constructor(readonly database: Database) {
    this.notices.setMaxListeners(0);
  }

  /** Opens (and by default migrates) a store. */
  static async open(target: DatabaseTarget, options: StoreOpenOptions = {}): Promise<Store> {
    const migrating = options.migrate ?? true;
    const database = await openDatabase(target, { ...options, migrating });
    try {
      if (migrating) await migrate(database);
    } catch (err) {
      await database.close();
      throw err;
    }
    return new Store(database);
  }

  /** The drizzle database, for repositories of other layers of the store. */
  get db(): Db {
    return this.database.db;
  }

  /** Runs `work` in one transaction (re-run on deadlock / serialization failure). */
  transaction<T>(work: (tx: Db) => Promise<T>): Promise<T> {
    return inTransaction(this.db, work);
  }

  createSession(input: CreateSessionInput): Promise<SessionRecord> {
    return this.transaction((tx) => createSessionTx(tx, input));
  }

  getSession(id: string): Promise<SessionRecord | undefined> {
    return getSession(this.db, id);
  }

  listSessions(options: ListSessionsOptions): Promise<SessionRecord[]> {
    return listSessions(this.db, options);
  }

  /** Deletes a session and all it holds, unless it has an invocation not ended (see {@link deleteSessionTx}). */
  deleteSession(id: string): Promise<boolean> {
    return this.transaction((tx) => deleteSessionTx(tx, id));
  }

  /** Appends one event atomically (see {@link appendEvent}). */
  appendEvent(input: AppendEventInput): Promise<Event> {
    return appendEvent(this.db, input);
  }

  listEvents(sessionId: string, options?: ListEventsOptions): Promise<Event[]> {
    return listEvents(this.db, sessionId, options);
  }

  /** Every event of a session in seq order, reading only what this process has not read before. */
  sessionHistory(sessionId: string): Promise<readonly Event[]> {
    return this.histories.read(this.db, sessionId);
  }

  readState(sessionId: string, invocationId?: string): Promise<Record<string, unknown>> {
    return readInvocationState(this.db, sessionId, invocationId);
  }

  /**
   * Follows session `sessionId`: calls `onNotice` for every event of it stored from now on (by any process).
   * Resolves once the LISTEN is active and the session is marked followed (events of an unfollowed session are not
   * NOTIFYed, see `sessions.followed_until`), so an event committed after this resolves is never missed while the
   * LISTEN connection stays up, and one committed before is visible to a read after it. When the connection was
   * lost and restored, `onReconnect` is called instead of the notices sent meanwhile: re-read from the store.
   * The mark is renewed while anyone in this process follows the session. Returns the unsubscribe function.
   */
  async followSession(
    sessionId: string,
    onNotice: (notice: EventNotice) => void,
    onReconnect?: () => void,
  ): Promise<() => void> {
    this.listening ??= this.database
      .listen(
        EVENTS_CHANNEL,
        (payload) => {
          try {
            this.notices.emit('event', JSON.parse(payload) as EventNotice);
          } catch {
            // A foreign NOTIFY on our channel: ignore rather than crash the listener.
          }
        },
        () => this.notices.emit('reconnect'),
      )
      .then(
        (unlisten) => {
          this.unlisten = unlisten;
        },
        (err: unknown) => {
          // Not kept: a follow that found the database away must not fail every later follow of this process.
          this.listening = undefined;
          throw err;
        },
      );
    await this.listening;
    const handler = (notice: EventNotice) => {
      if (notice.sessionId === sessionId) onNotice(notice);
    };
    this.notices.on('event', handler);
    if (onReconnect) this.notices.on('reconnect', onReconnect);
    this.followed.set(sessionId, (this.followed.get(sessionId) ?? 0) + 1);
    const unsubscribe = () => {
      this.notices.off('event', handler);
      if (onReconnect) this.notices.off('reconnect', onReconnect);
      const left = (this.followed.get(sessionId) ?? 1) - 1;
      if (left > 0) this.followed.set(sessionId, left);
      else this.followed.delete(sessionId);
      if (this.followed.size === 0) {
        clearInterval(this.renewal);
        this.renewal = undefined;
      }
    };
    try {
      await markFollowed(this.db, [sessionId]);
    } catch (err) {
      unsubscribe();
      throw err;
    }
    // Renewed well before it lapses. A failed renewal is retried at the next tick; meanwhile followers still
    // re-read on their own schedule (and on any other notice).
    this.renewal ??= setInterval(() => {
      markFollowed(this.db, [...this.followed.keys()]).catch(() => undefined);
    }, FOLLOW_TTL_MS / 4).unref();
    return unsubscribe;
  }

  /**
   * Subscribes to any NOTIFY channel (one LISTEN per channel per store). Resolves once listening. `onReconnect`
   * is called after the LISTEN connection was lost and restored (notifications sent meanwhile are lost).
   */
  async listen(
    channel: string,
    onPayload: (payload: string) => void,
    onReconnect?: () => void,
  ): Promise<() => Promise<void>> {
    return this.database.listen(channel, onPayload, onReconnect);
  }

  async close(): Promise<void> {
    clearInterval(this.renewal);
    this.notices.removeAllListeners();
    await this.unlisten?.().catch(() => undefined);
    await this.database.close();
  }
}
