/**
 * A worker's metrics endpoint (`agentloom worker --metrics-port N`): a minimal node:http server answering
 * `GET /metrics` (Prometheus text exposition of a registry) and `GET /healthz`; everything else is 404.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

/** Options of {@link startMetricsServer}. */
export interface MetricsServerOptions {
  registry: Registry;
  /** 0: any free port (the returned `url` says which). */
  port: number;
  /** Interface to bind. Default `0.0.0.0`: Prometheus scrapes from another machine or container. */
  host?: string;
  /** Called when a scrape fails (a collect callback threw); the scrape answers 500. */
  onError?: (err: unknown) => void;
}

/** A listening metrics server. */
export interface MetricsServer {
  /** `http://host:port` to reach it from this machine (`127.0.0.1` when bound to every interface). */
  url: string;
  /** The port it listens on (the one chosen when asked for 0). */
  port: number;
  close(): Promise<void>;
}

/** Starts the metrics server; resolves once it listens. */
export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const { registry } = options;
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('method not allowed\n');
    } else if (path === '/metrics') {
      registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
        (err: unknown) => {
          options.onError?.(err);
          res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics collection failed\n');
        },
      );
    } else if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}\n');
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /metrics\n');
    }
  });
  // Scrapers keep connections alive; close() must not wait for them.
  server.keepAliveTimeout = 5_000;
  const host = options.host ?? '0.0.0.0';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}
