/**
 * Sampling that every process of a run decides alike. A run's spans are started in many processes, days apart,
 * under parents that are named (derived ids) rather than carried: such a parent has no sampled flag of its own.
 * {@link RunSampler} decides those spans as the run's root span is decided — by the root sampler on the trace id
 * (`always_on`, `always_off` and `traceidratio` are all functions of the trace id alone) — and every other span as
 * the configured sampler does (a run with a caller's `traceparent` follows the caller's sampled flag).
 */
import {
  createContextKey,
  ROOT_CONTEXT,
  type Attributes,
  type Context,
  type Link,
  type Sampler,
  type SamplingResult,
  type SpanKind,
} from '@opentelemetry/api';

/** Set on the context of a run's span whose trace id is derived from its invocation (no caller's trace). */
export const DERIVED_TRACE = createContextKey('agentloom derived trace');

/** A sampler deciding a run's spans as its root is decided; see the module's comment. */
export class RunSampler implements Sampler {
  /**
   * @param base the sampler of every other span (usually parent-based, as `OTEL_TRACES_SAMPLER` says)
   * @param root the sampler of a trace's root, a function of the trace id alone (`always_on`, `traceidratio`, …)
   */
  constructor(
    private readonly base: Sampler,
    private readonly root: Sampler,
  ) {}

  shouldSample(
    context: Context,
    traceId: string,
    spanName: string,
    spanKind: SpanKind,
    attributes: Attributes,
    links: Link[],
  ): SamplingResult {
    if (context.getValue(DERIVED_TRACE) === true) {
      return this.root.shouldSample(ROOT_CONTEXT, traceId, spanName, spanKind, attributes, links);
    }
    return this.base.shouldSample(context, traceId, spanName, spanKind, attributes, links);
  }

  toString(): string {
    return `RunSampler{base=${String(this.base)}, root=${String(this.root)}}`;
  }
}
