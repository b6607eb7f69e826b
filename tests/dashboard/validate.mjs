// SPDX-License-Identifier: MIT
// Validate collectd-metastable's Grafana dashboard and provisioning files.
//
//   node validate.mjs [--self-test] [--provisioning DIR] DASHBOARD.json
//
// Grafana cannot be installed here, so this is the substitute: the JSON
// schemas are generated, with ts-json-schema-generator, from the TypeScript
// types Grafana publishes in @grafana/schema (the dashboard model and each
// panel plugin's Options and FieldConfig), and checked with ajv.  Objects are
// closed (additionalProperties: false), so a misspelt option is an error.
//
// On top of the schema, checks that the schema cannot express:
//   - panel ids unique (rows included), refIds unique within a panel;
//   - every target has a non-empty PromQL expression and uses the
//     dashboard's datasource variable, as does every panel and query
//     variable;
//   - every $variable used in a query or title is defined;
//   - field overrides: the panel's defaults merged with each override must
//     still match the schema; byName matchers, fillBelowTo and table sortBy
//     name a series or column that exists, byFrameRefID a refId that exists;
//   - timeseries panels have a unit and an axis label, every panel a
//     description; panels stay inside the 24-column grid without overlaps;
//   - a field coloured by thresholds with a green step whose query reads
//     the tipping headroom must also read the storm flag (a storm is never
//     shown as green headroom; tests/dashboard-queries.sh checks the values);
//   - with --provisioning: the provisioning YAML files point at this
//     dashboard and define the datasource it expects.
//
// --self-test then breaks the dashboard in many ways, one at a time, and
// fails unless every broken copy is rejected.
//
// Exit status: 0 valid, 1 invalid (errors on stderr), 2 usage.

import { createGenerator } from 'ts-json-schema-generator';
import Ajv from 'ajv';
import YAML from 'yaml';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const rawTypes = path.join(here, 'node_modules/@grafana/schema/dist/types/raw');
const DATASOURCE = { type: 'prometheus', uid: '${datasource}' };

// Panel plugins this dashboard may use: directory under raw/composable and
// whether the plugin declares a FieldConfig (fieldConfig.defaults.custom).
const PANEL_KINDS = {
  timeseries: { dir: 'timeseries', fieldConfig: true },
  'state-timeline': { dir: 'statetimeline', fieldConfig: true },
  table: { dir: 'table', fieldConfig: true },
  stat: { dir: 'stat', fieldConfig: false },
};

// ---------------------------------------------------------------- schemas

function generate(file, types) {
  const generator = createGenerator({
    path: path.join(rawTypes, file),
    tsconfig: path.join(here, 'tsconfig.json'),
    skipTypeCheck: true,
    additionalProperties: false,
  });
  return Object.fromEntries(types.map((t) => [t, generator.createSchema(t)]));
}

function buildValidators() {
  const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
  const v = {};
  const dash = generate('dashboard/x/types.gen.d.ts', ['Dashboard', 'Panel', 'RowPanel', 'FieldConfig']);
  v.dashboard = ajv.compile(dash.Dashboard);
  v.panel = ajv.compile(dash.Panel);
  v.row = ajv.compile(dash.RowPanel);
  v.fieldConfig = ajv.compile(dash.FieldConfig);
  v.kinds = {};
  for (const [kind, k] of Object.entries(PANEL_KINDS)) {
    const file = `composable/${k.dir}/panelcfg/x/types.gen.d.ts`;
    const s = generate(file, k.fieldConfig ? ['Options', 'FieldConfig'] : ['Options']);
    v.kinds[kind] = {
      options: ajv.compile(s.Options),
      custom: k.fieldConfig ? ajv.compile(s.FieldConfig) : null,
    };
  }
  return v;
}

function schemaErrors(validate, value, where) {
  if (validate(value)) return [];
  return validate.errors.map((e) => {
    let msg = `${where}${e.instancePath || ''}: ${e.message}`;
    if (e.params?.additionalProperty) msg += ` '${e.params.additionalProperty}'`;
    if (e.params?.allowedValues) msg += ` (${e.params.allowedValues.join(', ')})`;
    if (e.params?.allowedValue !== undefined) msg += ` (${JSON.stringify(e.params.allowedValue)})`;
    return msg;
  });
}

// ---------------------------------------------------------------- checks

const isRow = (p) => p.type === 'row';

// Every panel, rows and the panels inside collapsed rows included.
function allPanels(d) {
  const out = [];
  for (const p of d.panels ?? []) {
    out.push(p);
    if (isRow(p)) out.push(...(p.panels ?? []));
  }
  return out;
}

function label(p) {
  return `panel ${p.id} '${p.title ?? ''}'`;
}

// Names the series or columns of a panel will have: legendFormat of the
// targets (when literal), and a table's columns after its organize
// transformation.  null when a name depends on the data.
function seriesNames(p) {
  const names = new Set();
  for (const t of p.targets ?? []) {
    const lf = t.legendFormat;
    if (typeof lf === 'string' && lf !== '__auto' && !lf.includes('{{')) names.add(lf);
  }
  for (const tr of p.transformations ?? []) {
    if (tr.id === 'organize') {
      for (const n of Object.values(tr.options?.renameByName ?? {})) names.add(n);
    }
  }
  return names;
}

const VAR_REF = /\$\{(\w+)(?:[:.][^}]*)?\}|\$(\w+)|\[\[(\w+)(?::\w+)?\]\]/g;

function variablesUsed(text) {
  const out = [];
  for (const m of String(text).matchAll(VAR_REF)) {
    const name = m[1] ?? m[2] ?? m[3];
    if (!name.startsWith('__')) out.push(name);
  }
  return out;
}

function sameDatasource(ds) {
  return ds && typeof ds === 'object' && ds.type === DATASOURCE.type && ds.uid === DATASOURCE.uid;
}

function checkVariables(d, errors) {
  const vars = d.templating?.list ?? [];
  const names = new Set(vars.map((v) => v.name));
  const dsVar = vars.find((v) => v.name === 'datasource');
  if (!dsVar || dsVar.type !== 'datasource' || dsVar.query !== 'prometheus')
    errors.push("templating: needs a variable 'datasource' of type datasource for prometheus");
  for (const v of vars) {
    if (v.type !== 'query') continue;
    if (!sameDatasource(v.datasource))
      errors.push(`variable ${v.name}: datasource must be ${JSON.stringify(DATASOURCE)}`);
    const q = typeof v.query === 'string' ? v.query : v.query?.query;
    if (typeof q !== 'string' || !/^label_values\(.+\)$/.test(q.trim()))
      errors.push(`variable ${v.name}: query must be label_values(...), got ${JSON.stringify(q)}`);
    for (const used of variablesUsed(q ?? ''))
      if (!names.has(used)) errors.push(`variable ${v.name}: query uses undefined variable $${used}`);
  }
  return { names, vars };
}

function checkGrid(d, errors) {
  const boxes = [];
  for (const p of d.panels ?? []) {
    const g = p.gridPos;
    if (!g) {
      errors.push(`${label(p)}: no gridPos`);
      continue;
    }
    if (g.x < 0 || g.w <= 0 || g.h <= 0 || g.x + g.w > 24)
      errors.push(`${label(p)}: gridPos ${JSON.stringify(g)} outside the 24-column grid`);
    for (const [q, h] of boxes) {
      if (g.x < h.x + h.w && h.x < g.x + g.w && g.y < h.y + h.h && h.y < g.y + g.h)
        errors.push(`${label(p)}: gridPos overlaps ${label(q)}`);
    }
    boxes.push([p, g]);
  }
}

function checkOverrides(p, v, kind, errors) {
  const fc = p.fieldConfig;
  const defaults = fc.defaults ?? {};
  const names = seriesNames(p);
  const refIds = new Set((p.targets ?? []).map((t) => t.refId));
  (fc.overrides ?? []).forEach((o, i) => {
    const where = `${label(p)} fieldConfig.overrides[${i}]`;
    const { id, options } = o.matcher ?? {};
    if (id === 'byName' && !names.has(options))
      errors.push(`${where}: byName '${options}' matches no series or column (${[...names].join(', ')})`);
    if (id === 'byFrameRefID' && !refIds.has(options))
      errors.push(`${where}: byFrameRefID '${options}' matches no target`);
    // Apply the override on top of the defaults, as Grafana does, and
    // validate the result.
    const merged = structuredClone(defaults);
    for (const pr of o.properties ?? []) {
      if (typeof pr.id !== 'string' || pr.id === '') {
        errors.push(`${where}: property without an id`);
        continue;
      }
      if (pr.id.startsWith('custom.')) {
        merged.custom = merged.custom ?? {};
        merged.custom[pr.id.slice(7)] = pr.value;
      } else {
        merged[pr.id] = pr.value;
      }
      if (pr.id === 'custom.fillBelowTo' && !names.has(pr.value))
        errors.push(`${where}: fillBelowTo '${pr.value}' names no series of the panel`);
    }
    const custom = merged.custom;
    delete merged.custom;
    errors.push(...schemaErrors(v.fieldConfig, merged, `${where} (merged with defaults)`));
    if (custom !== undefined) {
      if (!kind.custom) errors.push(`${where}: ${p.type} has no custom field config`);
      else errors.push(...schemaErrors(kind.custom, custom, `${where} custom (merged with defaults)`));
    }
  });
}

// The colour config Grafana applies to one target's field: the defaults
// with the overrides that match its legend, its renamed table column or its
// refId.
function colourConfig(p, t) {
  const d = p.fieldConfig?.defaults ?? {};
  const cfg = { color: d.color, thresholds: d.thresholds };
  const names = new Set([t.legendFormat]);
  for (const tr of p.transformations ?? [])
    if (tr.id === 'organize') names.add(tr.options?.renameByName?.[`Value #${t.refId}`]);
  for (const o of p.fieldConfig?.overrides ?? []) {
    const { id, options } = o.matcher ?? {};
    if ((id === 'byName' && names.has(options)) || (id === 'byFrameRefID' && options === t.refId))
      for (const pr of o.properties ?? []) if (pr.id in cfg) cfg[pr.id] = pr.value;
  }
  return cfg;
}

function checkStormColours(p, errors) {
  for (const t of p.targets ?? []) {
    const cfg = colourConfig(p, t);
    const green = cfg.color?.mode === 'thresholds' && (cfg.thresholds?.steps ?? []).some((s) => s.color === 'green');
    if (green && /collectd_metastable_tipping_headroom/.test(t.expr ?? '') && !/collectd_metastable_storm\b/.test(t.expr))
      errors.push(`${label(p)} targets ${t.refId}: tipping headroom coloured green by thresholds without the storm flag: a storm would show green headroom`);
  }
}

function checkPanel(p, v, varNames, errors) {
  errors.push(...schemaErrors(v.panel, p, `${label(p)} `));
  const kind = v.kinds[p.type];
  if (!kind) {
    errors.push(`${label(p)}: panel type '${p.type}' is not one this dashboard validates (${Object.keys(PANEL_KINDS).join(', ')})`);
    return;
  }
  if (!p.title) errors.push(`panel ${p.id}: no title`);
  if (typeof p.description !== 'string' || p.description.length < 20)
    errors.push(`${label(p)}: needs a description saying what the panel shows`);
  if (!sameDatasource(p.datasource))
    errors.push(`${label(p)}: datasource must be ${JSON.stringify(DATASOURCE)}`);
  for (const used of variablesUsed(p.title ?? ''))
    if (!varNames.has(used)) errors.push(`${label(p)}: title uses undefined variable $${used}`);

  // Targets.
  const targets = p.targets ?? [];
  if (targets.length === 0) errors.push(`${label(p)}: no targets`);
  const refIds = new Set();
  targets.forEach((t, i) => {
    const where = `${label(p)} targets[${i}]`;
    if (typeof t.refId !== 'string' || t.refId === '') errors.push(`${where}: no refId`);
    else if (refIds.has(t.refId)) errors.push(`${where}: duplicate refId '${t.refId}'`);
    refIds.add(t.refId);
    if (typeof t.expr !== 'string' || t.expr.trim() === '') errors.push(`${where}: no expression (expr)`);
    if (!sameDatasource(t.datasource)) errors.push(`${where}: datasource must be ${JSON.stringify(DATASOURCE)}`);
    for (const used of variablesUsed(t.expr ?? ''))
      if (!varNames.has(used)) errors.push(`${where}: expr uses undefined variable $${used}`);
  });

  // Options and field config against the plugin's schema.
  errors.push(...schemaErrors(kind.options, p.options ?? {}, `${label(p)} options`));
  const fc = p.fieldConfig;
  if (!fc || !fc.defaults) {
    errors.push(`${label(p)}: no fieldConfig.defaults`);
    return;
  }
  if (kind.custom) errors.push(...schemaErrors(kind.custom, fc.defaults.custom ?? {}, `${label(p)} fieldConfig.defaults.custom`));
  else if (fc.defaults.custom && Object.keys(fc.defaults.custom).length)
    errors.push(`${label(p)}: ${p.type} has no custom field config`);

  if (p.type === 'timeseries') {
    if (typeof fc.defaults.unit !== 'string' || fc.defaults.unit === '')
      errors.push(`${label(p)}: timeseries needs fieldConfig.defaults.unit (the axis unit)`);
    if (!fc.defaults.custom?.axisLabel) errors.push(`${label(p)}: timeseries needs an axis label`);
  }
  checkOverrides(p, v, kind, errors);

  checkStormColours(p, errors);

  if (p.type === 'table') {
    const names = seriesNames(p);
    for (const s of p.options?.sortBy ?? [])
      if (!names.has(s.displayName)) errors.push(`${label(p)} options.sortBy: no column '${s.displayName}'`);
  }
}

export function check(d, v) {
  const errors = [];
  if (!v.dashboard(d)) {
    // The whole dashboard is invalid; the part-by-part checks below say
    // where.  Keep the raw errors in case they do not.
    errors.push('dashboard: does not match the Dashboard schema');
    const { panels, ...rest } = d;
    errors.push(...schemaErrors(v.dashboard, { ...rest, panels: [] }, 'dashboard'));
    if (!Array.isArray(panels)) errors.push(...schemaErrors(v.dashboard, d, 'dashboard'));
  }
  const { names: varNames, vars } = checkVariables(d, errors);

  const ids = new Map();
  for (const p of allPanels(d)) {
    if (typeof p.id !== 'number') errors.push(`${label(p)}: no numeric id`);
    else if (ids.has(p.id)) errors.push(`${label(p)}: duplicate panel id ${p.id} (also '${ids.get(p.id).title}')`);
    else ids.set(p.id, p);
  }
  for (const p of allPanels(d)) {
    if (isRow(p)) {
      errors.push(...schemaErrors(v.row, p, `${label(p)} `));
      if (p.repeat) {
        const rv = vars.find((x) => x.name === p.repeat);
        if (!rv) errors.push(`${label(p)}: repeats over undefined variable '${p.repeat}'`);
        else if (!rv.multi && !rv.includeAll) errors.push(`${label(p)}: repeat variable '${p.repeat}' is neither multi nor includeAll`);
      }
      for (const used of variablesUsed(p.title ?? ''))
        if (!varNames.has(used)) errors.push(`${label(p)}: title uses undefined variable $${used}`);
    } else {
      checkPanel(p, v, varNames, errors);
    }
  }
  checkGrid(d, errors);
  return errors;
}

// ---------------------------------------------------------------- provisioning

const PROVISIONING_ROOT = '/etc/grafana/provisioning';

function checkProvisioning(dir, dashboardFile, d) {
  const errors = [];
  const yamlFiles = (sub) =>
    fs.existsSync(path.join(dir, sub))
      ? fs.readdirSync(path.join(dir, sub)).filter((f) => /\.ya?ml$/.test(f)).map((f) => path.join(dir, sub, f))
      : [];
  const load = (f) => {
    try {
      return YAML.parse(fs.readFileSync(f, 'utf8'));
    } catch (e) {
      errors.push(`${f}: ${e.message}`);
      return null;
    }
  };

  const dsFiles = yamlFiles('datasources');
  if (dsFiles.length === 0) errors.push(`${dir}/datasources: no datasource file`);
  const dsVar = (d.templating?.list ?? []).find((x) => x.name === 'datasource');
  let found = false;
  for (const f of dsFiles) {
    const y = load(f);
    if (!y) continue;
    if (y.apiVersion !== 1) errors.push(`${f}: apiVersion must be 1`);
    for (const ds of y.datasources ?? []) {
      if (ds.type !== 'prometheus') errors.push(`${f}: datasource '${ds.name}' is not of type prometheus`);
      if (!/^https?:\/\//.test(ds.url ?? '')) errors.push(`${f}: datasource '${ds.name}' needs an http(s) url`);
      if (!ds.name || !ds.uid) errors.push(`${f}: datasource needs a name and a uid`);
      if (ds.uid === dsVar?.current?.value) found = true;
    }
  }
  if (!found)
    errors.push(`provisioning: no datasource with the uid '${dsVar?.current?.value}' that the dashboard's datasource variable selects`);

  const provFiles = yamlFiles('dashboards');
  if (provFiles.length === 0) errors.push(`${dir}/dashboards: no dashboard provider file`);
  let served = false;
  for (const f of provFiles) {
    const y = load(f);
    if (!y) continue;
    if (y.apiVersion !== 1) errors.push(`${f}: apiVersion must be 1`);
    for (const pr of y.providers ?? []) {
      if (pr.type !== 'file') errors.push(`${f}: provider '${pr.name}' must be of type file`);
      const p = pr.options?.path;
      if (typeof p !== 'string' || !p.startsWith(PROVISIONING_ROOT + '/')) {
        errors.push(`${f}: provider '${pr.name}' options.path must lie under ${PROVISIONING_ROOT}`);
        continue;
      }
      // Where that path lands when this directory is copied to
      // /etc/grafana/provisioning.
      const local = path.join(dir, path.relative(PROVISIONING_ROOT, p));
      if (path.resolve(path.dirname(dashboardFile)) === path.resolve(local)) served = true;
    }
  }
  if (!served) errors.push(`provisioning: no dashboard provider serves ${dashboardFile}`);
  return errors;
}

// ---------------------------------------------------------------- self-test

function firstPanel(d, type) {
  const p = allPanels(d).find((x) => x.type === type);
  if (!p) throw new Error(`self-test: the dashboard has no ${type} panel`);
  return p;
}

function overrideOf(p, name) {
  const o = p.fieldConfig.overrides.find((x) => x.matcher.id === 'byName' && x.matcher.options === name);
  if (!o) throw new Error(`self-test: panel ${p.id} has no override for '${name}'`);
  return o;
}

// Each breaks one thing; the validator must report it (expect: a regular
// expression one of the errors must match).
const MUTATIONS = [
  ['wrong type in timeseries options', /options\/legend\/showLegend: must be boolean/,
    (d) => { firstPanel(d, 'timeseries').options.legend.showLegend = 'yes'; }],
  ['unknown timeseries option', /must NOT have additional properties 'legnd'/,
    (d) => { firstPanel(d, 'timeseries').options.legnd = {}; }],
  ['missing required timeseries option', /options: must have required property 'tooltip'/,
    (d) => { delete firstPanel(d, 'timeseries').options.tooltip; }],
  ['wrong type in timeseries fieldConfig', /custom\/lineWidth: must be number/,
    (d) => { firstPanel(d, 'timeseries').fieldConfig.defaults.custom.lineWidth = '2'; }],
  ['bad enum in timeseries fieldConfig', /custom\/drawStyle: must be equal to one of the allowed values/,
    (d) => { firstPanel(d, 'timeseries').fieldConfig.defaults.custom.drawStyle = 'curve'; }],
  ['wrong type in an override', /custom \(merged with defaults\)\/lineWidth: must be number/,
    (d) => { firstPanel(d, 'timeseries').fieldConfig.overrides[0].properties.push({ id: 'custom.lineWidth', value: 'thick' }); }],
  ['unknown field config in an override', /must NOT have additional properties 'colour'/,
    (d) => { firstPanel(d, 'timeseries').fieldConfig.overrides[0].properties.push({ id: 'colour', value: 'red' }); }],
  ['wrong type in state-timeline options', /options\/rowHeight: must be number/,
    (d) => { firstPanel(d, 'state-timeline').options.rowHeight = 'tall'; }],
  ['wrong value mapping type', /mappings\/0\/type: must be equal to constant/,
    (d) => { firstPanel(d, 'state-timeline').fieldConfig.defaults.mappings[0].type = 'values'; }],
  ['missing required table field config', /custom: must have required property 'cellOptions'/,
    (d) => { delete firstPanel(d, 'table').fieldConfig.defaults.custom.cellOptions; }],
  ['table sorted by a column that does not exist', /options.sortBy: no column 'Headroom'/,
    (d) => { firstPanel(d, 'table').options.sortBy[1].displayName = 'Headroom'; }],
  ['duplicate panel id', /duplicate panel id/,
    (d) => { const ps = allPanels(d).filter((p) => !isRow(p)); ps[ps.length - 1].id = ps[0].id; }],
  ['target with an empty expression', /no expression \(expr\)/,
    (d) => { firstPanel(d, 'timeseries').targets[0].expr = '  '; }],
  ['target without an expression', /no expression \(expr\)/,
    (d) => { delete firstPanel(d, 'state-timeline').targets[0].expr; }],
  ['duplicate refId', /duplicate refId/,
    (d) => { const p = firstPanel(d, 'timeseries'); p.targets[1].refId = p.targets[0].refId; }],
  ['datasource given as a name', /datasource: must be object|datasource must be/,
    (d) => { firstPanel(d, 'timeseries').datasource = 'Prometheus'; }],
  ['target on another datasource', /targets\[0\]: datasource must be/,
    (d) => { firstPanel(d, 'timeseries').targets[0].datasource = { type: 'prometheus', uid: 'other' }; }],
  ['undefined template variable', /undefined variable \$cluster/,
    (d) => { const t = firstPanel(d, 'timeseries').targets[0]; t.expr = t.expr.replace('}', ', cluster="$cluster"}'); }],
  ['schemaVersion as a string', /dashboard\/schemaVersion: must be number/,
    (d) => { d.schemaVersion = '42'; }],
  ['unknown dashboard property', /dashboard: must NOT have additional properties 'rows'/,
    (d) => { d.rows = []; }],
  ['panel without a type', /must have required property 'type'/,
    (d) => { delete firstPanel(d, 'timeseries').type; }],
  ['timeseries without a unit', /needs fieldConfig.defaults.unit/,
    (d) => { delete firstPanel(d, 'timeseries').fieldConfig.defaults.unit; }],
  ['hysteresis band filled to a missing series', /fillBelowTo 'recovery' names no series/,
    (d) => {
      const p = allPanels(d).find((x) => x.fieldConfig?.overrides?.some((o) => o.properties.some((pr) => pr.id === 'custom.fillBelowTo')));
      for (const o of p.fieldConfig.overrides) for (const pr of o.properties) if (pr.id === 'custom.fillBelowTo') pr.value = 'recovery';
    }],
  ['override for a series that does not exist', /byName 'offered'/,
    (d) => { overrideOf(firstPanel(d, 'timeseries'), 'offered load').matcher.options = 'offered'; }],
  ['overlapping panels', /overlaps/,
    (d) => { const ps = d.panels.filter((p) => !isRow(p)); ps[1].gridPos = { ...ps[0].gridPos }; }],
  ['panel without a description', /needs a description/,
    (d) => { delete firstPanel(d, 'timeseries').description; }],
  ['plain tipping headroom in green, storms included', /a storm would show green headroom/,
    (d) => {
      const p = allPanels(d).find((x) => x.type === 'timeseries' && x.targets.some((t) => /tipping_headroom/.test(t.expr)));
      p.targets[0].expr = 'collectd_metastable_tipping_headroom{instance="$host", metastable=~"$service"}';
    }],
  ['fleet table colours the plain tipping headroom', /a storm would show green headroom/,
    (d) => {
      const t = firstPanel(d, 'table').targets.find((x) => /tipping_headroom/.test(x.expr));
      t.expr = 'max by (instance, metastable) (collectd_metastable_tipping_headroom)';
    }],
];

function selfTest(d, v) {
  const base = check(d, v);
  if (base.length) {
    console.error('self-test: the dashboard itself is invalid; fix it first');
    return false;
  }
  let ok = true;
  for (const [name, expect, mutate] of MUTATIONS) {
    const broken = structuredClone(d);
    mutate(broken);
    const errors = check(broken, v);
    const hit = errors.find((e) => expect.test(e));
    if (hit) {
      console.log(`ok   rejected: ${name}: ${hit}`);
    } else {
      ok = false;
      console.error(`FAIL accepted: ${name}` + (errors.length ? ` (errors: ${errors.join('; ')})` : ' (no error at all)'));
    }
  }
  return ok;
}

// ---------------------------------------------------------------- main

function main(argv) {
  let selfTestMode = false;
  let provisioning = null;
  let usage = false;
  const files = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--self-test') selfTestMode = true;
    else if (argv[i] === '--provisioning' && i + 1 < argv.length) provisioning = argv[++i];
    else if (argv[i].startsWith('-')) usage = true;
    else files.push(argv[i]);
  }
  if (usage || files.length !== 1) {
    console.error('usage: node validate.mjs [--self-test] [--provisioning DIR] DASHBOARD.json');
    return 2;
  }
  const file = files[0];
  let d;
  try {
    d = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    console.error(`${file}: ${e.message}`);
    return 1;
  }
  const t0 = Date.now();
  const v = buildValidators();
  console.log(`schemas generated from @grafana/schema in ${Date.now() - t0} ms`);

  const errors = check(d, v);
  if (provisioning) errors.push(...checkProvisioning(provisioning, file, d));
  for (const e of errors) console.error(`${file}: ${e}`);
  if (errors.length) return 1;
  const n = allPanels(d);
  console.log(`${file}: valid (${n.filter((p) => !isRow(p)).length} panels, ${n.filter(isRow).length} rows, ` +
    `${n.reduce((s, p) => s + (p.targets?.length ?? 0), 0)} queries)`);
  if (provisioning) console.log(`${provisioning}: provisioning files serve it`);

  if (selfTestMode) {
    if (!selfTest(d, v)) return 1;
    console.log(`self-test: all ${MUTATIONS.length} broken copies rejected`);
  }
  return 0;
}

process.exitCode = main(process.argv.slice(2));
