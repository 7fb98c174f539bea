/** Types of the Prometheus text parser the metrics tests use (test/support/OpenMetrics.ts). */
declare module "parse-prometheus-text-format" {
  interface ParsedFamily {
    readonly name: string
    readonly help: string
    readonly type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED"
    readonly metrics: ReadonlyArray<unknown>
  }
  const parsePrometheusTextFormat: (text: string) => Array<ParsedFamily>
  export default parsePrometheusTextFormat
}
