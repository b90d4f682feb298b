import type { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';

// The app is one data stack and stateless siblings; many assertions are about the whole (which
// function reads which table). mergedTemplate() gives them one template: every stack's resources,
// with each cross-stack import replaced by the exported value itself (so `{ Ref: <table> }` reads
// the same in every stack). Per-stack facts (budgets, exports, protection) use each stack's own.

type Json = unknown;

interface TemplateJson {
  Resources?: Record<string, Json>;
  Outputs?: Record<string, { Value: Json; Export?: { Name: Json } }>;
  Parameters?: Record<string, Json>;
  Rules?: Record<string, Json>;
}

/** Export name → exported value, over every stack given. */
export function exportsOf(templates: readonly TemplateJson[]): Map<string, Json> {
  const exports = new Map<string, Json>();
  for (const t of templates)
    for (const output of Object.values(t.Outputs ?? {}))
      if (typeof output.Export?.Name === 'string') exports.set(output.Export.Name, output.Value);
  return exports;
}

function inline(node: Json, exports: Map<string, Json>): Json {
  if (Array.isArray(node)) return node.map((n) => inline(n, exports));
  if (node && typeof node === 'object') {
    const entries = Object.entries(node);
    const [first] = entries;
    if (entries.length === 1 && first?.[0] === 'Fn::ImportValue' && typeof first[1] === 'string') {
      if (!exports.has(first[1])) throw new Error(`import of ${first[1]}, which no stack exports`);
      return inline(exports.get(first[1]), exports);
    }
    return Object.fromEntries(entries.map(([k, v]) => [k, inline(v, exports)]));
  }
  return node;
}

export function mergedTemplate(stacks: readonly Stack[]): Template {
  const templates = stacks.map((s) => Template.fromStack(s).toJSON() as TemplateJson);
  const exports = exportsOf(templates);
  const merged: Required<Pick<TemplateJson, 'Resources' | 'Outputs'>> & TemplateJson = {
    Resources: {},
    Outputs: {},
  };
  for (const t of templates) {
    for (const [id, resource] of Object.entries(t.Resources ?? {})) {
      if (id in merged.Resources) throw new Error(`logical id ${id} in two stacks`);
      merged.Resources[id] = inline(resource, exports);
    }
    for (const [id, output] of Object.entries(t.Outputs ?? {}))
      if (!output.Export) merged.Outputs[id] = inline(output, exports) as typeof output;
    merged.Parameters = { ...merged.Parameters, ...t.Parameters };
    merged.Rules = { ...merged.Rules, ...t.Rules };
  }
  return Template.fromJSON({ ...merged });
}
