/**
 * Debian's Chromium, headless, for the dashboard's browser tests (driven by playwright-core): the
 * flags keep it off the network this machine does not have, and each launch gets a fresh
 * temporary profile, removed at close.
 */
import { type Browser, chromium } from "playwright-core"
import { CHROMIUM_PATH } from "./requirements.js"

export const launchChromium = (): Promise<Browser> =>
  chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    timeout: 120_000
  })
