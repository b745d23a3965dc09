/**
 * Longest files first. Two workers drain one queue, so a 60 s file picked up last runs alone at the
 * end while the other worker idles. vitest orders by the durations it cached from the previous run,
 * but CI starts from a clean clone with no cache, where vitest falls back to file size, which says
 * little (a 90-line fault test spawning four processes outruns a 900-line parser test). So a file
 * the cache does not know takes its seconds from the last CI run's "slowest files" list
 * (test/support/summaryReporter.ts prints it); files in neither keep vitest's size order, after.
 */
import { relative } from "node:path"
import { BaseSequencer, type TestSpecification } from "vitest/node"

/** Seconds per file from the last CI run (2 cores); only the order matters, refresh when it drifts. */
export const ciSeconds: Readonly<Record<string, number>> = {
  "test/verifier/twoProcesses.test.ts": 65,
  "test/verifier/statelessFlood.test.ts": 60,
  "test/faults/network.test.ts": 58,
  "test/faults/processDeath.test.ts": 55,
  "test/faults/componentDeath.test.ts": 60,
  "test/verifier/cluster.test.ts": 110,
  "test/verifier/clusterTransport.test.ts": 45,
  "test/faults/pushNetwork.test.ts": 45,
  "test/testing/fleet.test.ts": 40,
  "test/crypto/ports.test.ts": 35,
  "test/faults/databaseLoss.test.ts": 29,
  "test/verifier/clusterStatus.test.ts": 25,
  "test/cli/upVerifiers.test.ts": 25,
  "test/verifier/poller.e2e.test.ts": 24,
  "test/push/swtpm.test.ts": 24,
  "test/tenant/enrol.test.ts": 21,
  "test/push/sessions.test.ts": 20,
  "test/http/slowClients.test.ts": 19
}

export default class LongestFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const bySize = await super.sort(files)
    const root = this.ctx.config.root
    const seconds = (spec: TestSpecification): number => {
      const file = relative(root, spec.moduleId)
      const cached = this.ctx.cache.getFileTestResults(`${spec.project.name}:${file}`)
      if (cached !== undefined) return cached.failed ? Number.POSITIVE_INFINITY : cached.duration / 1000
      return ciSeconds[file] ?? -1
    }
    // a stable sort: files with no figure (-1) keep the order vitest gave them
    return bySize.map((spec) => ({ spec, s: seconds(spec) })).sort((a, b) => b.s - a.s).map(({ spec }) => spec)
  }
}
