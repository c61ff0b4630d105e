/** One sample line of the Prometheus text format: `name{label="value",...} value [timestamp]`. */
export interface PrometheusSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface PrometheusExposition {
  /** `# TYPE` of each metric family. */
  types: Map<string, string>;
  /** `# HELP` of each metric family. */
  help: Map<string, string>;
  samples: PrometheusSample[];
  /** The value of the one sample named `name` whose labels are exactly `labels`; undefined when there is none. */
  value(name: string, labels?: Record<string, string>): number | undefined;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)/y;

function unescapeLabel(value: string): string {
  return value.replace(/\\(.)/g, (_match, escaped: string) => (escaped === 'n' ? '\n' : escaped));
}

/**
 * A sample value as Prometheus reads it (Go's ParseFloat): NaN and Inf in any case, which matters because prom-client
 * writes `Nan` (the event-loop lag's mean when two scrapes come within its 10 ms resolution).
 */
function parseNumber(text: string): number {
  const special = text.toLowerCase();
  if (special === '+inf' || special === 'inf') return Number.POSITIVE_INFINITY;
  if (special === '-inf') return Number.NEGATIVE_INFINITY;
  if (special === 'nan') return Number.NaN;
  const value = Number(text);
  if (Number.isNaN(value)) throw new Error(`not a sample value: ${text}`);
  return value;
}

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const match = LABEL.exec(text);
    if (!match) throw new Error(`malformed labels in: ${line}`);
    labels[match[1]!] = unescapeLabel(match[2]!);
  }
  return labels;
}

/**
 * Parses the Prometheus text exposition format (version 0.0.4) strictly: every line is a comment, a blank, or a
 * sample, and anything else throws, so a formatting mistake fails the test that scrapes it.
 */
export function parsePrometheusText(text: string): PrometheusExposition {
  const types = new Map<string, string>();
  const help = new Map<string, string>();
  const samples: PrometheusSample[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const comment = /^#\s*(HELP|TYPE)\s+(\S+)\s*(.*)$/.exec(line);
    if (comment) {
      (comment[1] === 'TYPE' ? types : help).set(comment[2]!, comment[3]!);
      continue;
    }
    if (line.startsWith('#')) continue;
    const sample = SAMPLE.exec(line);
    if (!sample) throw new Error(`not a Prometheus sample line: ${line}`);
    samples.push({ name: sample[1]!, labels: parseLabels(sample[2] ?? '', line), value: parseNumber(sample[3]!) });
  }
  return {
    types,
    help,
    samples,
    value(name, labels = {}) {
      const wanted = Object.entries(labels);
      const matching = samples.filter(
        (sample) =>
          sample.name === name &&
          Object.keys(sample.labels).length === wanted.length &&
          wanted.every(([key, value]) => sample.labels[key] === value),
      );
      if (matching.length > 1) throw new Error(`${matching.length} samples of ${name} ${JSON.stringify(labels)}`);
      return matching[0]?.value;
    },
  };
}
