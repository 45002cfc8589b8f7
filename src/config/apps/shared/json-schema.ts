/**
 * `outputSchema` in YAML: a JSON Schema, turned into the zod schema LlmAgent takes (zod's `fromJSONSchema`).
 * Unknown `type` names are reported at their exact node first, since the converter's own error has no path.
 */
import * as z from 'zod';
import { suggest, type YamlPath } from './yaml-source.js';

const JSON_TYPES = ['string', 'number', 'integer', 'boolean', 'object', 'array', 'null'];

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checkTypes(node: unknown, path: YamlPath, report: (path: YamlPath, message: string) => void): void {
  if (!isRecord(node)) return;
  const types = node.type === undefined ? [] : Array.isArray(node.type) ? node.type : [node.type];
  types.forEach((type, i) => {
    if (typeof type === 'string' && JSON_TYPES.includes(type)) return;
    const at = Array.isArray(node.type) ? [...path, 'type', i] : [...path, 'type'];
    report(at, `unknown JSON Schema type "${String(type)}"; ${suggest(String(type), JSON_TYPES, 'one of')}`);
  });
  if (isRecord(node.properties)) {
    for (const [key, child] of Object.entries(node.properties))
      checkTypes(child, [...path, 'properties', key], report);
  }
  if (node.items !== undefined) checkTypes(node.items, [...path, 'items'], report);
  if (isRecord(node.additionalProperties))
    checkTypes(node.additionalProperties, [...path, 'additionalProperties'], report);
  for (const key of ['anyOf', 'oneOf', 'allOf']) {
    const members = node[key];
    if (Array.isArray(members)) members.forEach((m, i) => checkTypes(m, [...path, key, i], report));
  }
}

/**
 * The zod schema of a JSON Schema written in YAML, or undefined after reporting why it cannot be one.
 * Supports what zod's converter supports (types, properties, required, items, enum, const, anyOf, formats…).
 */
export function zodFromJsonSchema(
  schema: Record<string, unknown>,
  path: YamlPath,
  report: (path: YamlPath, message: string) => void,
): z.ZodType | undefined {
  let bad = false;
  checkTypes(schema, path, (at, message) => {
    bad = true;
    report(at, message);
  });
  if (bad) return undefined;
  try {
    return z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch (err) {
    report(
      path,
      `not a JSON Schema zod can read (${(err as Error).message}); write e.g. { type: object, properties: { title: { type: string } }, required: [title] }`,
    );
    return undefined;
  }
}
