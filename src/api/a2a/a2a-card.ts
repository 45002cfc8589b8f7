/**
 * An app's agent card: its name, its root agent's description, a skill per agent of its tree (the root and its
 * sub-agents), streaming on, the HTTP bearer scheme when API keys are on, and its JSON-RPC endpoint for both A2A
 * v1.0 and v0.3. Served in v1.0's shape to clients that ask for `A2A-Version: 1.x`, else in v0.3's (what a client
 * without the header, kagent's and ADK's included, reads: `url`, `protocolVersion`, `preferredTransport`).
 */
import { AgentCard, type AgentSkill } from '@a2a-js/sdk';
import type { BaseAgent } from '../../agents/base-agent.js';
import type { RegisteredApp } from '../../engine/apps/registry.js';

const MODES = ['text/plain', 'application/json'];
const SCHEME = 'bearer';

/** What a card is built from. */
export interface CardOptions {
  app: RegisteredApp;
  /** The JSON-RPC endpoint (absolute URL). */
  url: string;
  version: string;
  /** Whether requests need an API key (the card then declares the bearer scheme). */
  authEnabled: boolean;
}

/** A skill per agent the app runs: the root, its sub-agents, and the agents it offers as tools (kagent's subagents). */
function skillsOf(app: RegisteredApp): AgentSkill[] {
  return [...app.agents.values()].map((agent: BaseAgent) => ({
    id: agent.name,
    name: agent.name,
    description: agent.description || `the ${agent.name} agent`,
    tags: [agent.constructor.name],
    examples: [],
    inputModes: [],
    outputModes: [],
    securityRequirements: [],
  }));
}

/** The v1.0 card (the SDK's type). */
export function agentCardOf(options: CardOptions): AgentCard {
  const { app, url, version, authEnabled } = options;
  return {
    name: app.name,
    description: app.root.description || `agentloom app ${app.name}`,
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
      { url, protocolBinding: 'JSONRPC', protocolVersion: '0.3', tenant: '' },
    ],
    provider: undefined,
    version,
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: authEnabled
      ? {
          [SCHEME]: {
            scheme: {
              $case: 'httpAuthSecurityScheme',
              value: { description: 'an agentloom API key', scheme: 'bearer', bearerFormat: '' },
            },
          },
        }
      : {},
    securityRequirements: authEnabled ? [{ schemes: { [SCHEME]: { list: [] } } }] : [],
    defaultInputModes: MODES,
    defaultOutputModes: MODES,
    skills: skillsOf(app),
    signatures: [],
  };
}

/** The v1.0 card as JSON (protobuf JSON names, as the SDK writes it). */
export function agentCardJson(card: AgentCard): unknown {
  return AgentCard.toJSON(card);
}

/** The v0.3 card as JSON: the same agent, with `url` the JSON-RPC endpoint and the v1.0 interfaces embedded. */
export function legacyAgentCardJson(card: AgentCard): Record<string, unknown> {
  const v1 = AgentCard.toJSON(card) as { supportedInterfaces?: unknown };
  const auth = Object.keys(card.securitySchemes).length > 0;
  return {
    protocolVersion: '0.3.0',
    name: card.name,
    description: card.description,
    url: card.supportedInterfaces[0]?.url,
    preferredTransport: 'JSONRPC',
    version: card.version,
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: card.defaultInputModes,
    defaultOutputModes: card.defaultOutputModes,
    skills: card.skills.map((skill) => ({
      id: skill.id,
      name: skill.name,
      description: skill.description,
      tags: skill.tags,
    })),
    ...(auth
      ? {
          securitySchemes: {
            [SCHEME]: { type: 'http', scheme: 'bearer', description: 'an agentloom API key' },
          },
          security: [{ [SCHEME]: [] }],
        }
      : {}),
    supportedInterfaces: v1.supportedInterfaces,
  };
}

/** Whether a request asks for the v1.0 card (`A2A-Version: 1.x`); without the header a client gets v0.3's. */
export function wantsV1Card(versionHeader: string | undefined): boolean {
  const major = Number.parseInt((versionHeader ?? '').trim().split('.')[0] ?? '', 10);
  return Number.isFinite(major) && major >= 1;
}
