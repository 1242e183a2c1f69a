// Stripe's shape as a JSON Schema per object, for checking what the sandbox answers (issue 7, point 3).
//
// Two sources, merged field by field:
// - stripe-node's generated types (`node_modules/stripe`, the API version the sandbox renders, 2026-10-28.endive),
//   read with the TypeScript compiler: which fields exist, which are always present (not `?`), which may be null,
//   which are expandable (`string | Customer`), and the shape of every nested object and list. These say what
//   changed since 2023-08-16 (fields added and removed, requiredness and nullability), so they decide structure.
// - Stripe's published OpenAPI document (`stripe-openapi/` beside this file, 2023-08-16), which still applies where
//   the SDK is open: its enums. The SDK widens enums with `OtherString`; a value is accepted when either source
//   lists it (a value added since 2023 appears in the SDK's literal union).
// Objects are closed (`additionalProperties: false`): a field that neither the SDK nor Stripe has is a fault too.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import ts from 'typescript';

/** The SDK type of each object the sandbox answers with, by its `object` value (`deleted` ones apart). */
export const sdkTypes: Readonly<Record<string, string>> = {
  balance_transaction: 'BalanceTransaction',
  charge: 'Charge',
  credit_note: 'CreditNote',
  credit_note_line_item: 'CreditNoteLineItem',
  customer: 'Customer',
  customer_balance_transaction: 'CustomerBalanceTransaction',
  dispute: 'Dispute',
  event: 'EventBase',
  invoice: 'Invoice',
  invoiceitem: 'InvoiceItem',
  line_item: 'InvoiceLineItem',
  payment_intent: 'PaymentIntent',
  payment_method: 'PaymentMethod',
  price: 'Price',
  product: 'Product',
  refund: 'Refund',
  subscription: 'Subscription',
  subscription_item: 'SubscriptionItem',
  'test_helpers.test_clock': 'TestHelpers.TestClock',
  webhook_endpoint: 'WebhookEndpoint',
};

export const deletedSdkTypes: Readonly<Record<string, string>> = {
  customer: 'DeletedCustomer',
  'test_helpers.test_clock': 'TestHelpers.DeletedTestClock',
  webhook_endpoint: 'DeletedWebhookEndpoint',
};

/** The OpenAPI component of each SDK type, where the 2023-08-16 document has one. */
const openApiComponents: Readonly<Record<string, string>> = {
  ...Object.fromEntries(Object.entries(sdkTypes).map(([object, type]) => [type, object])),
  DeletedCustomer: 'deleted_customer',
  'TestHelpers.DeletedTestClock': 'deleted_test_helpers.test_clock',
  DeletedWebhookEndpoint: 'deleted_webhook_endpoint',
};

export type JsonSchema = { [key: string]: unknown };

/** `ids`: an unexpanded response, where every expandable field must be an id; `expanded`: either form passes. */
export type ExpandMode = 'ids' | 'expanded';

// ---- the SDK's types, read with the compiler ----

type Shape =
  | { kind: 'string'; literals: string[]; open: boolean }
  | { kind: 'number' }
  | { kind: 'boolean'; literal: boolean | null }
  | { kind: 'null' }
  | { kind: 'any' }
  | { kind: 'array'; items: Shape }
  | { kind: 'map'; values: Shape }
  | { kind: 'list'; items: Shape }
  | { kind: 'ref'; name: string; expandable: boolean }
  | { kind: 'union'; members: Shape[] };

interface ObjectShape {
  props: Map<string, { shape: Shape; optional: boolean }>;
}

function readSdk(rootNames: readonly string[]): { defs: Map<string, ObjectShape>; roots: Map<string, string> } {
  // A file that exists only in memory, beside this one, so `stripe` resolves from the project's node_modules.
  const probePath = resolve(dirname(new URL(import.meta.url).pathname), '__sdk_probe.ts');
  const probe = `import Stripe from 'stripe';\n${rootNames.map((name, i) => `export type Root${i} = Stripe.${name};`).join('\n')}\n`;
  const options: ts.CompilerOptions = { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, strict: true, noEmit: true, skipLibCheck: true, types: [] };
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  host.readFile = (file) => (resolve(file) === probePath ? probe : readFile(file));
  host.fileExists = (file) => resolve(file) === probePath || fileExists(file);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (file, language) => (resolve(file) === probePath ? ts.createSourceFile(file, probe, language) : getSourceFile(file, language));
  const program = ts.createProgram([probePath], options, host);
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(probePath);
  if (source === undefined) throw new Error('schema probe did not compile');

  const defs = new Map<string, ObjectShape>();
  const pending: Array<{ name: string; type: ts.Type }> = [];
  const names = new Map<ts.Type, string>();

  const nameOf = (type: ts.Type): string => {
    const known = names.get(type);
    if (known !== undefined) return known;
    const symbol = type.aliasSymbol ?? type.getSymbol();
    let name = symbol === undefined ? `anon${names.size}` : checker.getFullyQualifiedName(symbol).replace(/^"[^"]*"\./, '');
    while ([...names.values()].includes(name)) name += '_';
    names.set(type, name);
    return name;
  };

  const isObjectWithLiteralObject = (type: ts.Type): boolean => {
    const prop = type.getProperty('object');
    if (prop === undefined) return false;
    return checker.getTypeOfSymbol(prop).isStringLiteral();
  };

  const shapeOf = (type: ts.Type): Shape => {
    if (type.flags & ts.TypeFlags.Any || type.flags & ts.TypeFlags.Unknown) return { kind: 'any' };
    if (type.isUnion()) {
      const members = type.types.filter((t) => !(t.flags & (ts.TypeFlags.Undefined | ts.TypeFlags.Void)));
      const literals = members.filter((t) => t.isStringLiteral()).map((t) => (t as ts.StringLiteralType).value);
      const others = members.filter((t) => !t.isStringLiteral());
      const booleans = others.filter((t) => t.flags & ts.TypeFlags.BooleanLiteral);
      const rest = others.filter((t) => !(t.flags & ts.TypeFlags.BooleanLiteral));
      const shapes: Shape[] = [];
      const openString = rest.some((t) => t.flags & ts.TypeFlags.String || isOtherString(t));
      if (literals.length > 0 || openString) shapes.push({ kind: 'string', literals, open: openString });
      if (booleans.length === 2) shapes.push({ kind: 'boolean', literal: null });
      else for (const b of booleans) shapes.push({ kind: 'boolean', literal: checker.typeToString(b) === 'true' });
      const hasIdString = openString;
      for (const t of rest) {
        if (t.flags & ts.TypeFlags.String || isOtherString(t)) continue;
        const shape = shapeOf(t);
        if (shape.kind === 'ref' && hasIdString && isObjectWithLiteralObject(t)) shapes.push({ ...shape, expandable: true });
        else shapes.push(shape);
      }
      return shapes.length === 1 ? (shapes[0] ?? { kind: 'any' }) : { kind: 'union', members: shapes };
    }
    if (type.flags & ts.TypeFlags.Null) return { kind: 'null' };
    if (type.flags & ts.TypeFlags.String || isOtherString(type)) return { kind: 'string', literals: [], open: true };
    if (type.isStringLiteral()) return { kind: 'string', literals: [type.value], open: false };
    if (type.flags & (ts.TypeFlags.Number | ts.TypeFlags.NumberLiteral)) return { kind: 'number' };
    if (type.flags & (ts.TypeFlags.Boolean | ts.TypeFlags.BooleanLiteral)) {
      return { kind: 'boolean', literal: type.flags & ts.TypeFlags.BooleanLiteral ? checker.typeToString(type) === 'true' : null };
    }
    const symbolName = (type.aliasSymbol ?? type.getSymbol())?.getName();
    // Decimal fields travel as strings; stripe-node turns them into its Decimal class on the way in.
    if (symbolName === 'Decimal') return { kind: 'string', literals: [], open: true };
    if (checker.isArrayType(type)) {
      const [item] = checker.getTypeArguments(type as ts.TypeReference);
      return { kind: 'array', items: item === undefined ? { kind: 'any' } : shapeOf(item) };
    }
    if (symbolName === 'ApiList') {
      const data = type.getProperty('data');
      const dataType = data === undefined ? undefined : checker.getTypeOfSymbol(data);
      const [item] = dataType !== undefined && checker.isArrayType(dataType) ? checker.getTypeArguments(dataType as ts.TypeReference) : [];
      return { kind: 'list', items: item === undefined ? { kind: 'any' } : shapeOf(item) };
    }
    if (type.flags & ts.TypeFlags.Object) {
      const index = checker.getIndexInfoOfType(type, ts.IndexKind.String);
      if (index !== undefined && type.getProperties().length === 0) return { kind: 'map', values: shapeOf(index.type) };
      // An empty interface (an event's `data.object`) says nothing; that object is checked on its own.
      if (index === undefined && type.getProperties().length === 0) return { kind: 'any' };
      const name = nameOf(type);
      if (!defs.has(name) && !pending.some((p) => p.name === name)) pending.push({ name, type });
      return { kind: 'ref', name, expandable: false };
    }
    return { kind: 'any' };
  };

  const isOtherString = (type: ts.Type): boolean => type.isIntersection() && type.types.some((t) => t.flags & ts.TypeFlags.String);

  const roots = new Map<string, string>();
  for (const statement of source.statements) {
    if (!ts.isTypeAliasDeclaration(statement)) continue;
    const index = Number(statement.name.text.slice('Root'.length));
    const shape = shapeOf(checker.getTypeAtLocation(statement.name));
    const root = rootNames[index];
    if (shape.kind !== 'ref' || root === undefined) throw new Error(`Stripe.${root ?? '?'} is not an object type`);
    roots.set(root, shape.name);
  }
  for (let next = pending.shift(); next !== undefined; next = pending.shift()) {
    const props = new Map<string, { shape: Shape; optional: boolean }>();
    defs.set(next.name, { props });
    for (const prop of next.type.getProperties()) {
      const propType = checker.getTypeOfSymbol(prop);
      // `deleted?: void` marks the live object; a void field is never sent.
      const present = propType.isUnion() ? propType.types.filter((t) => !(t.flags & (ts.TypeFlags.Undefined | ts.TypeFlags.Void))) : [propType];
      if (present.length === 0 || propType.flags & ts.TypeFlags.Void) continue;
      props.set(prop.getName(), { shape: shapeOf(propType), optional: (prop.flags & ts.SymbolFlags.Optional) !== 0 });
    }
  }
  return { defs, roots };
}

// ---- the OpenAPI document ----

type OpenApiNode = { [key: string]: unknown };

/** Kept beside this file (see stripe-openapi/README.md), so the test reads the same document on every clone. */
function findOpenApiDocument(): string {
  const folder = fileURLToPath(new URL('./stripe-openapi/', import.meta.url));
  const file = readdirSync(folder).find((name) => name.endsWith('.json.gz'));
  if (file === undefined) throw new Error(`Stripe's OpenAPI document is missing from ${folder}`);
  return join(folder, file);
}

function loadOpenApi(): Record<string, OpenApiNode> {
  const document = JSON.parse(gunzipSync(readFileSync(findOpenApiDocument())).toString('utf8')) as { components: { schemas: Record<string, OpenApiNode> } };
  return document.components.schemas;
}

// ---- the merge ----

export interface StripeSchemas {
  /** The schema of one object type, by SDK type name (`Invoice`, `TestHelpers.TestClock`). */
  schemaFor(sdkType: string, mode: ExpandMode): JsonSchema;
  /** Stripe's error envelope, from the OpenAPI document. */
  errorSchema(): JsonSchema;
}

export function loadStripeSchemas(): StripeSchemas {
  const rootNames = [...new Set([...Object.values(sdkTypes), ...Object.values(deletedSdkTypes)])];
  const { defs, roots } = readSdk(rootNames);
  const components = loadOpenApi();

  const deref = (node: OpenApiNode | undefined): OpenApiNode | undefined => {
    let current = node;
    for (let i = 0; i < 10 && current !== undefined; i++) {
      const ref = current['$ref'];
      if (typeof ref === 'string') current = components[ref.replace('#/components/schemas/', '')];
      else if (Array.isArray(current['anyOf']) && current['anyOf'].length === 1) current = current['anyOf'][0] as OpenApiNode;
      else return current;
    }
    return current;
  };
  const branches = (node: OpenApiNode | undefined): OpenApiNode[] => {
    const resolved = deref(node);
    if (resolved === undefined) return [];
    const anyOf = resolved['anyOf'] ?? resolved['oneOf'];
    return Array.isArray(anyOf) ? anyOf.flatMap((branch) => branches(branch as OpenApiNode)) : [resolved];
  };
  const openApiEnum = (node: OpenApiNode | undefined): string[] =>
    branches(node).flatMap((b) => (Array.isArray(b['enum']) ? (b['enum'] as unknown[]).filter((v): v is string => typeof v === 'string') : []));
  const openApiObject = (node: OpenApiNode | undefined): OpenApiNode | undefined => branches(node).find((b) => b['type'] === 'object' || b['properties'] !== undefined);
  const openApiItems = (node: OpenApiNode | undefined): OpenApiNode | undefined => {
    const array = branches(node).find((b) => b['type'] === 'array');
    return array?.['items'] as OpenApiNode | undefined;
  };
  const openApiListItems = (node: OpenApiNode | undefined): OpenApiNode | undefined => {
    const list = openApiObject(node);
    const data = (list?.['properties'] as Record<string, OpenApiNode> | undefined)?.['data'];
    return data?.['items'] as OpenApiNode | undefined;
  };

  const cache = new Map<string, { defs: Record<string, JsonSchema>; root: string }>();
  const nodeIds = new WeakMap<OpenApiNode, number>();
  let nodeCount = 0;
  const idOf = (node: OpenApiNode | undefined): string => {
    if (node === undefined) return 'none';
    let id = nodeIds.get(node);
    if (id === undefined) {
      id = ++nodeCount;
      nodeIds.set(node, id);
    }
    return String(id);
  };

  const build = (rootType: string, mode: ExpandMode): { defs: Record<string, JsonSchema>; root: string } => {
    const out: Record<string, JsonSchema> = {};
    const keyFor = (name: string, node: OpenApiNode | undefined): string => `${name}@${idOf(node)}`.replace(/[^A-Za-z0-9_.@-]/g, '_');

    const objectDef = (name: string, node: OpenApiNode | undefined): string => {
      const key = keyFor(name, node);
      if (out[key] !== undefined) return key;
      out[key] = {};
      const def = defs.get(name);
      if (def === undefined) throw new Error(`no SDK definition ${name}`);
      const openProps = (openApiObject(node)?.['properties'] ?? {}) as Record<string, OpenApiNode>;
      const properties: Record<string, JsonSchema> = {};
      const required: string[] = [];
      for (const [prop, { shape, optional }] of def.props) {
        properties[prop] = schemaOf(shape, openProps[prop]);
        if (!optional) required.push(prop);
      }
      out[key] = { type: 'object', properties, required, additionalProperties: false };
      return key;
    };

    const schemaOf = (shape: Shape, node: OpenApiNode | undefined): JsonSchema => {
      switch (shape.kind) {
        case 'any':
          return {};
        case 'null':
          return { type: 'null' };
        case 'number':
          return { type: 'number' };
        case 'boolean':
          return shape.literal === null ? { type: 'boolean' } : { const: shape.literal };
        case 'string': {
          const documented = openApiEnum(node);
          if (documented.length > 0) return { type: 'string', enum: [...new Set([...documented, ...shape.literals])] };
          if (!shape.open) return { type: 'string', enum: shape.literals };
          return { type: 'string' };
        }
        case 'array':
          return { type: 'array', items: schemaOf(shape.items, openApiItems(node)) };
        case 'map':
          return { type: 'object', additionalProperties: schemaOf(shape.values, undefined) };
        case 'list':
          return {
            type: 'object',
            properties: {
              object: { const: 'list' },
              data: { type: 'array', items: schemaOf(shape.items, openApiListItems(node)) },
              has_more: { type: 'boolean' },
              url: { type: 'string' },
              total_count: { type: 'number' },
            },
            required: ['object', 'data', 'has_more', 'url'],
            additionalProperties: false,
          };
        case 'ref': {
          const target = openApiObject(node) ?? (openApiComponents[shape.name] === undefined ? undefined : components[openApiComponents[shape.name] ?? '']);
          return { $ref: `#/$defs/${objectDef(shape.name, target)}` };
        }
        case 'union': {
          const members = mode === 'ids' ? shape.members.filter((m) => !(m.kind === 'ref' && m.expandable)) : shape.members;
          const objectBranches = branches(node);
          const anyOf = members.map((member) => {
            if (member.kind === 'ref') {
              const component = openApiComponents[member.name];
              const matching = objectBranches.find((b) => component !== undefined && b === components[component]) ?? (member.expandable ? undefined : openApiObject(node));
              return schemaOf(member, matching ?? (component === undefined ? undefined : components[component]));
            }
            return schemaOf(member, node);
          });
          return anyOf.length === 1 ? (anyOf[0] ?? {}) : { anyOf };
        }
        default: {
          const unreachable: never = shape;
          throw new Error(`unknown shape ${JSON.stringify(unreachable)}`);
        }
      }
    };

    const rootName = roots.get(rootType);
    if (rootName === undefined) throw new Error(`no SDK type Stripe.${rootType}`);
    const componentName = openApiComponents[rootType];
    const root = objectDef(rootName, componentName === undefined ? undefined : components[componentName]);
    return { defs: out, root };
  };

  return {
    schemaFor(sdkType, mode) {
      const cacheKey = `${sdkType}|${mode}`;
      let built = cache.get(cacheKey);
      if (built === undefined) {
        built = build(sdkType, mode);
        cache.set(cacheKey, built);
      }
      return { $ref: `#/$defs/${built.root}`, $defs: built.defs };
    },
    errorSchema() {
      const error = components['error'];
      if (error === undefined) throw new Error('the OpenAPI document has no error schema');
      return openApiToJsonSchema({ $ref: '#/components/schemas/error' }, components);
    },
  };
}

/** OpenAPI 3.0 (`nullable`, `$ref` into components) to JSON Schema, for the error envelope. */
function openApiToJsonSchema(root: OpenApiNode, components: Record<string, OpenApiNode>): JsonSchema {
  const $defs: Record<string, JsonSchema> = {};
  const convert = (node: OpenApiNode): JsonSchema => {
    const ref = node['$ref'];
    if (typeof ref === 'string') {
      const name = ref.replace('#/components/schemas/', '');
      if ($defs[name] === undefined) {
        $defs[name] = {};
        $defs[name] = convert(components[name] ?? {});
      }
      return { $ref: `#/$defs/${name}` };
    }
    const out: JsonSchema = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === 'properties') out[key] = Object.fromEntries(Object.entries(value as Record<string, OpenApiNode>).map(([k, v]) => [k, convert(v)]));
      else if (key === 'items') out[key] = convert(value as OpenApiNode);
      else if (key === 'anyOf' || key === 'oneOf') out[key] = (value as OpenApiNode[]).map(convert);
      else if (key === 'type' || key === 'required' || key === 'enum') out[key] = value;
    }
    if (node['nullable'] === true) {
      if (typeof out['type'] === 'string') out['type'] = [out['type'], 'null'];
      else if (Array.isArray(out['anyOf'])) out['anyOf'] = [...(out['anyOf'] as JsonSchema[]), { type: 'null' }];
      if (Array.isArray(out['enum'])) out['enum'] = [...(out['enum'] as unknown[]), null];
    }
    return out;
  };
  return { ...convert(root), $defs };
}

// ---- what `expand[]` may name ----

/** The shape of `sandbox/http/expandable-fields.ts`: see there. */
export type ExpandableTable = Record<string, Record<string, string | null>>;

/**
 * Fields Stripe sends only when `expand[]` names them (includable, like `charge.refunds`) that the 2023-08-16
 * document's `x-expandableFields` does not list. `customer.invoice_credit_balance`: absent from Stripe's own customer
 * fixture (stripe/openapi `fixtures3.json`) and from its documented example object, and returned once expanded.
 */
const INCLUDABLE_UNLISTED: Readonly<Record<string, readonly string[]>> = { customer: ['invoice_credit_balance'] };

/**
 * Derives the sandbox's table of expandable fields from the two sources: for each object the sandbox answers with
 * (and each nested hash inside one, keyed `object.field`), the fields Stripe's OpenAPI document lists in
 * `x-expandableFields` that the SDK still has, plus the fields the SDK types as expandable (`string | Customer`),
 * which covers the ones added since 2023-08-16. Each field says where a longer path goes: an object name, `list:<item>`,
 * a nested hash's key, `*` (several object types, or one the sandbox does not model) or null (nowhere).
 */
export function deriveExpandableFields(): ExpandableTable {
  const { defs, roots } = readSdk([...new Set([...Object.values(sdkTypes), ...Object.values(deletedSdkTypes)])]);
  const components = loadOpenApi();
  const objectOf = (defName: string): string | undefined => {
    const shape = defs.get(defName)?.props.get('object')?.shape;
    return shape?.kind === 'string' && !shape.open && shape.literals.length === 1 ? shape.literals[0] : undefined;
  };
  /** The component a property points at (`$ref`, or the one `$ref` among `anyOf`). */
  const componentOf = (node: OpenApiNode | undefined): OpenApiNode | undefined => {
    if (node === undefined) return undefined;
    const ref = node['$ref'];
    if (typeof ref === 'string') return components[ref.replace('#/components/schemas/', '')];
    const anyOf = node['anyOf'];
    if (!Array.isArray(anyOf)) return undefined;
    const refs = (anyOf as OpenApiNode[]).map((branch) => componentOf(branch)).filter((c) => c !== undefined);
    return refs.length === 1 ? refs[0] : undefined;
  };
  const membersOf = (shape: Shape): Shape[] => {
    const members = shape.kind === 'union' ? shape.members : [shape];
    return members.flatMap((m) => (m.kind === 'array' ? membersOf(m.items) : [m]));
  };
  const served = new Set(Object.keys(sdkTypes));
  const table: ExpandableTable = {};
  const visit = (key: string, defName: string, component: OpenApiNode | undefined): void => {
    if (table[key] !== undefined) return;
    const fields: Record<string, string | null> = {};
    table[key] = fields;
    const def = defs.get(defName);
    if (def === undefined) throw new Error(`no SDK definition ${defName}`);
    const listed = [...((component?.['x-expandableFields'] ?? []) as string[]), ...(INCLUDABLE_UNLISTED[key] ?? [])];
    const props = (component?.['properties'] ?? {}) as Record<string, OpenApiNode>;
    for (const [field, { shape }] of def.props) {
      const members = membersOf(shape);
      const expandable = members.filter((m): m is Extract<Shape, { kind: 'ref' }> => m.kind === 'ref' && m.expandable);
      if (expandable.length > 0) {
        const targets = [...new Set(expandable.map((m) => objectOf(m.name)))];
        const [only] = targets;
        fields[field] = targets.length === 1 && only !== undefined && served.has(only) ? only : '*';
        continue;
      }
      // A hash the OpenAPI document does not list (added since 2023, such as an invoice's `parent`) still leads to
      // the expandable fields inside it, as `parent.subscription_details.subscription` does.
      const isListed = listed.includes(field);
      const list = members.find((m): m is Extract<Shape, { kind: 'list' }> => m.kind === 'list');
      const ref = members.find((m): m is Extract<Shape, { kind: 'ref' }> => m.kind === 'ref');
      const tagged = ref === undefined ? undefined : objectOf(ref.name);
      if (ref !== undefined && tagged === undefined && key.split('.').length < 3) {
        const nested = `${key}.${field}`;
        visit(nested, ref.name, componentOf(props[field]));
        if (Object.keys(table[nested] ?? {}).length > 0) fields[field] = nested;
        else {
          delete table[nested];
          if (isListed) fields[field] = null;
        }
      } else if (!isListed) continue;
      else if (list !== undefined) {
        const items = membersOf(list.items).find((m) => m.kind === 'ref');
        const item = items?.kind === 'ref' ? objectOf(items.name) : undefined;
        fields[field] = `list:${item !== undefined && served.has(item) ? item : '*'}`;
      }
      else if (tagged !== undefined) fields[field] = served.has(tagged) ? tagged : '*';
      else fields[field] = null;
    }
  };
  for (const [object, sdkType] of Object.entries(sdkTypes)) {
    const defName = roots.get(sdkType);
    if (defName === undefined) throw new Error(`no SDK type Stripe.${sdkType}`);
    visit(object, defName, components[object]);
  }
  return table;
}
