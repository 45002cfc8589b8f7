/**
 * Spans of model and tool calls, in the GenAI semantic conventions: `chat {model}` (provider, model, token usage,
 * finish reasons) and `execute_tool {tool}` (name, call id). Children of the active span — a step's, see
 * run-trace.ts. Prompts, answers and tool arguments are recorded only when asked
 * (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true); credentials never.
 */
import { context, SpanKind, trace, type Tracer } from '@opentelemetry/api';
import type { Model } from '../../models/model.js';
import { wrapTool, type Tool } from '../../tools/tool.js';
import { isSuspension } from './observer.js';
import { genAiProvider, jsonAttribute, recordError } from './span-attributes.js';

/** A model whose calls are `chat {model}` spans. */
export function traceModel(model: Model, tracer: Tracer, captureContent: boolean): Model {
  return {
    name: model.name,
    ...(model.provider !== undefined ? { provider: model.provider } : {}),
    async generate(request, options) {
      const span = tracer.startSpan(`chat ${model.name}`, {
        kind: SpanKind.CLIENT,
        attributes: {
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': genAiProvider(model.provider),
          'gen_ai.request.model': request.model ?? model.name,
          'gen_ai.agent.name': request.agentName,
          ...(captureContent
            ? {
                'gen_ai.system_instructions': request.systemInstruction,
                'gen_ai.input.messages': jsonAttribute(request.contents),
              }
            : {}),
        },
      });
      try {
        const response = await context.with(trace.setSpan(context.active(), span), () =>
          model.generate(request, options),
        );
        const usage = response.usage;
        if (usage?.promptTokens !== undefined)
          span.setAttribute('gen_ai.usage.input_tokens', usage.promptTokens);
        if (usage?.outputTokens !== undefined)
          span.setAttribute('gen_ai.usage.output_tokens', usage.outputTokens);
        if (response.finishReason)
          span.setAttribute('gen_ai.response.finish_reasons', [response.finishReason]);
        if (captureContent) span.setAttribute('gen_ai.output.messages', jsonAttribute([response.content]));
        return response;
      } catch (err) {
        recordError(span, err);
        throw err;
      } finally {
        span.end();
      }
    },
  };
}

/** A tool whose runs are `execute_tool {tool}` spans. */
export function traceTool(tool: Tool, tracer: Tracer, captureContent: boolean): Tool {
  return wrapTool(tool, {
    async run(args, ctx) {
      const span = tracer.startSpan(`execute_tool ${tool.name}`, {
        kind: SpanKind.INTERNAL,
        attributes: {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': tool.name,
          'gen_ai.tool.call.id': ctx.functionCallId,
          'gen_ai.agent.name': ctx.agentName,
          ...(captureContent ? { 'gen_ai.tool.call.arguments': jsonAttribute(args) } : {}),
        },
      });
      try {
        const result = await context.with(trace.setSpan(context.active(), span), () => tool.run(args, ctx));
        if (captureContent) span.setAttribute('gen_ai.tool.call.result', jsonAttribute(result));
        return result;
      } catch (err) {
        if (isSuspension(err)) span.setAttribute('agentloom.tool.suspended', true);
        else recordError(span, err);
        throw err;
      } finally {
        span.end();
      }
    },
  });
}
