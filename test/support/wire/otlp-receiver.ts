/**
 * A local OTLP/HTTP trace receiver for tests: a node:http server taking `POST /v1/traces` in OTLP/JSON (the
 * exporters are run with OTEL_EXPORTER_OTLP_PROTOCOL=http/json), keeping every raw payload (for scans) and every
 * span flattened (attributes and resource attributes as plain objects).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One received span. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
  events: { name: string; attributes: Record<string, unknown> }[];
  status: { code?: number; message?: string };
}

interface KeyValue {
  key: string;
  value: Record<string, unknown>;
}

function valueOf(value: Record<string, unknown> | undefined): unknown {
  if (!value) return undefined;
  if ('stringValue' in value) return value.stringValue;
  if ('intValue' in value) return Number(value.intValue);
  if ('doubleValue' in value) return value.doubleValue;
  if ('boolValue' in value) return value.boolValue;
  if ('arrayValue' in value) {
    const values = (value.arrayValue as { values?: Record<string, unknown>[] }).values ?? [];
    return values.map((v) => valueOf(v));
  }
  return value;
}

function attributesOf(list: KeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, valueOf(kv.value)]));
}

const nanosToMs = (n: unknown): number => Number(BigInt(String(n)) / 1_000_000n);

/** A running receiver. */
export class OtlpReceiver {
  readonly payloads: string[] = [];
  readonly spans: ReceivedSpan[] = [];
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  /** Starts one on a free loopback port. */
  static async start(): Promise<OtlpReceiver> {
    const holder: { receiver?: OtlpReceiver } = {};
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        if (req.method === 'POST' && req.url === '/v1/traces') holder.receiver?.receive(body);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    holder.receiver = new OtlpReceiver(server, `http://127.0.0.1:${port}`);
    return holder.receiver;
  }

  private receive(body: string): void {
    this.payloads.push(body);
    const parsed = JSON.parse(body) as {
      resourceSpans?: {
        resource?: { attributes?: KeyValue[] };
        scopeSpans?: { spans?: Record<string, unknown>[] }[];
      }[];
    };
    for (const rs of parsed.resourceSpans ?? []) {
      const resource = attributesOf(rs.resource?.attributes);
      for (const ss of rs.scopeSpans ?? []) {
        for (const s of ss.spans ?? []) {
          this.spans.push({
            traceId: s.traceId as string,
            spanId: s.spanId as string,
            parentSpanId: (s.parentSpanId as string | undefined) || undefined,
            name: s.name as string,
            startMs: nanosToMs(s.startTimeUnixNano),
            endMs: nanosToMs(s.endTimeUnixNano),
            attributes: attributesOf(s.attributes as KeyValue[]),
            resource,
            events: ((s.events as { name: string; attributes?: KeyValue[] }[] | undefined) ?? []).map(
              (e) => ({
                name: e.name,
                attributes: attributesOf(e.attributes),
              }),
            ),
            status: (s.status as ReceivedSpan['status'] | undefined) ?? {},
          });
        }
      }
    }
  }

  /** The spans of one trace. */
  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  /** The environment that makes an agentloom process export its spans here, promptly. */
  env(): Record<string, string> {
    return {
      OTEL_EXPORTER_OTLP_ENDPOINT: this.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    };
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
