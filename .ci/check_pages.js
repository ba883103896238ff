// Screenshot check of built docs pages in headless Chromium, with no npm package: Chromium is
// driven over the DevTools protocol on a pipe (--remote-debugging-pipe), the site is served on
// 127.0.0.1 by a small static server.
//
//   node .ci/check_pages.js <site dir> <out dir> <page> [<page> ...]     (page: packages/<name>, or . for the home page)
//
// For each page it saves <out dir>/<page with / as ->.png (the README part, above "API
// reference", 1280 px wide) and fails (exit 1) when:
//   - KaTeX rendered nothing (no .katex element), reported an error (.katex-error), or left a
//     formula of arithmatex unrendered;
//   - an <img> did not load (naturalWidth 0), or any request of the page failed (404, ...);
//   - a code block or table is wider than its box (cut at the right edge, or its last columns
//     hidden behind a horizontal scroll bar), or a display formula runs out of the text column
//     (one that scrolls inside its own box is printed as a note);
//   - TeX delimiters ($, \(, \[) or Markdown (**) are left in the text: a formula or a list
//     item that was not converted;
//   - the page threw a JavaScript error.
// Requests outside the site (the theme asks GitHub for the repository's stars) are printed as
// notes: the check runs offline. Then the 404 page is opened for two missing addresses, one at
// the server's root and one under a preview folder, and fails when a stylesheet, script or
// image of it did not load or its home link misses the site's home. Chromium: $CHROMIUM, else /usr/bin/chromium; exit 3 (and a
// message) when it is not there.
"use strict";
const fs = require("fs");
const http = require("http");
const os = require("os");
const path = require("path");
const { spawn } = require("child_process");

const WIDTH = 1280;
const HEIGHT = 900;
const MAX_SHOT = 16000; // px: Chromium's texture limit is 16384
const TIMEOUT_BASE_MS = 30000; // Chromium's start, then
const TIMEOUT_PAGE_MS = 30000; // each page (a loaded 2-core machine needs ~10 s a page)
const TYPES = {
  ".html": "text/html; charset=utf-8", ".css": "text/css", ".js": "text/javascript",
  ".json": "application/json", ".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg",
  ".woff2": "font/woff2", ".woff": "font/woff", ".ttf": "font/ttf", ".ico": "image/x-icon",
};

// the site under `prefix` (as a project page or a preview folder is); a missing file gets the
// site's 404.html with status 404, as GitHub Pages serves it
function serve(root, prefix = "/") {
  const server = http.createServer((req, res) => {
    let rel = decodeURIComponent(new URL(req.url, "http://x").pathname);
    if (!rel.startsWith(prefix)) {
      res.writeHead(404).end("not found");
      return;
    }
    rel = "/" + rel.slice(prefix.length);
    if (rel.endsWith("/")) rel += "index.html";
    const file = path.join(root, path.normalize(rel));
    if (!file.startsWith(root) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      const missing = path.join(root, "404.html");
      if (fs.existsSync(missing)) {
        res.writeHead(404, { "Content-Type": TYPES[".html"] });
        fs.createReadStream(missing).pipe(res);
      } else {
        res.writeHead(404).end("not found");
      }
      return;
    }
    res.writeHead(200, { "Content-Type": TYPES[path.extname(file)] || "application/octet-stream" });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

// the DevTools protocol over fds 3 (to Chromium) and 4 (from it), NUL-separated JSON messages
function devtools(child) {
  let id = 0;
  let buffer = "";
  const waiting = new Map();
  const listeners = [];
  child.stdio[4].on("data", (chunk) => {
    buffer += chunk.toString("utf8");
    let end;
    while ((end = buffer.indexOf("\0")) >= 0) {
      const message = JSON.parse(buffer.slice(0, end));
      buffer = buffer.slice(end + 1);
      if (message.id !== undefined && waiting.has(message.id)) {
        const { resolve, reject, method } = waiting.get(message.id);
        waiting.delete(message.id);
        if (message.error) reject(new Error(`${method}: ${message.error.message}`));
        else resolve(message.result);
      } else if (message.method) {
        for (const listener of listeners) listener(message);
      }
    }
  });
  const send = (method, params = {}, sessionId = undefined) =>
    new Promise((resolve, reject) => {
      id += 1;
      waiting.set(id, { resolve, reject, method });
      child.stdio[3].write(JSON.stringify({ id, method, params, sessionId }) + "\0");
    });
  return { send, on: (listener) => listeners.push(listener) };
}

// runs inside the page: waits for KaTeX, fonts and images, then measures
async function inspect() {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const article = document.querySelector("article.md-content__inner") || document.body;
  const formulas = () => [...article.querySelectorAll(".arithmatex")];
  for (let i = 0; i < 200; i++) {
    if (formulas().every((f) => f.querySelector(".katex, .katex-error"))) break;
    await sleep(50);
  }
  await document.fonts.ready;
  const images = [...document.images];
  await Promise.all(images.map((img) => (img.complete ? null : new Promise((r) => {
    img.addEventListener("load", r);
    img.addEventListener("error", r);
  }))));
  const where = (el) => {
    const heading = [...article.querySelectorAll("h1, h2, h3, h4")]
      .filter((h) => h.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING).pop();
    return heading ? heading.textContent.replace("¶", "").trim().slice(0, 60) : "top";
  };
  const snippet = (el) => el.textContent.replace(/\s+/g, " ").trim().slice(0, 70);
  const problems = [];
  const katex = article.querySelectorAll(".katex").length;
  // a package page has maths (the docs hook fails the build otherwise); the home page may not
  const packagePage = /\/packages\/[^/]+\/$/.test(location.pathname);
  if (katex === 0 && packagePage) problems.push("no formula rendered by KaTeX (no .katex element)");
  for (const el of article.querySelectorAll(".katex-error")) {
    problems.push(`KaTeX error in "${where(el)}": ${el.title || snippet(el)}`);
  }
  for (const el of formulas()) {
    if (!el.querySelector(".katex, .katex-error")) {
      problems.push(`formula not rendered in "${where(el)}": ${snippet(el)}`);
    }
  }
  for (const img of images) {
    if (img.naturalWidth === 0) problems.push(`image did not load: ${img.getAttribute("src")}`);
  }
  const right = article.getBoundingClientRect().right + 1;
  const wide = (el, box) => el.scrollWidth > box.clientWidth + 1 || el.getBoundingClientRect().right > right;
  for (const code of article.querySelectorAll("pre > code")) {
    if (wide(code, code)) {
      problems.push(`code block wider than its box (${code.scrollWidth} > ${code.clientWidth} px) in "${where(code)}": ${snippet(code)}`);
    }
  }
  // Material makes a table its own horizontal scroller (display: inline-block; overflow: auto)
  // inside a scrolling wrapper: either one scrolling hides columns
  for (const table of article.querySelectorAll("table")) {
    const box = (table.closest(".md-typeset__scrollwrap") || table.parentElement).getBoundingClientRect();
    if (table.scrollWidth > table.clientWidth + 1 || table.getBoundingClientRect().right > box.right + 1) {
      problems.push(`table wider than its container (${Math.round(table.getBoundingClientRect().width)} px, content ${table.scrollWidth} px, in ${Math.round(box.width)} px) in "${where(table)}": ${snippet(table.rows[0] || table)}`);
    }
  }
  // a display formula may scroll inside its own box (a note), never spill out of the column
  const notes = [];
  for (const display of article.querySelectorAll(".katex-display")) {
    if (display.getBoundingClientRect().right > right) {
      problems.push(`display formula runs out of the text column in "${where(display)}"`);
    } else if (display.scrollWidth > display.clientWidth + 1) {
      notes.push(`display formula scrolls in its box (${display.scrollWidth} > ${display.clientWidth} px) in "${where(display)}"`);
    }
  }
  // TeX delimiters left in the text: a formula KaTeX never saw, or $ signs around one it did
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.parentElement.closest("code, pre, .katex, script, style, .katex-error")
      ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (/\$|\\\(|\\\)|\\\[|\\\]/.test(n.textContent)) {
      problems.push(`TeX delimiter left in the text in "${where(n.parentElement)}": ${snippet(n.parentElement)}`);
    }
    if (/\n[ \t]*[-+*] |\*\*[^\s*][^*]*[^\s*]\*\*/.test(n.textContent)) {
      problems.push(`Markdown left in the text (a list item read as text?) in "${where(n.parentElement)}": ${snippet(n.parentElement)}`);
    }
  }
  const api = document.getElementById("api-reference");
  return {
    problems,
    notes,
    katex,
    formulas: formulas().length,
    images: images.length,
    codeBlocks: article.querySelectorAll("pre > code").length,
    tables: article.querySelectorAll("table").length,
    apiTop: api ? Math.round(api.getBoundingClientRect().top + window.scrollY) : null,
    height: document.documentElement.scrollHeight,
  };
}

async function checkPage(cdp, base, page, out) {
  const { targetId } = await cdp.send("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await cdp.send("Target.attachToTarget", { targetId, flatten: true });
  const send = (method, params) => cdp.send(method, params, sessionId);
  const failed = [];
  const external = [];
  const errors = [];
  const urls = new Map();
  let loaded;
  const load = new Promise((resolve) => (loaded = resolve));
  cdp.on((m) => {
    if (m.sessionId !== sessionId) return;
    if (m.method === "Page.loadEventFired") loaded();
    if (m.method === "Network.requestWillBeSent") urls.set(m.params.requestId, m.params.request.url);
    if (m.method === "Network.responseReceived" && m.params.response.status >= 400) {
      failed.push(`${m.params.response.status} ${m.params.response.url}`);
    }
    if (m.method === "Network.loadingFailed" && !m.params.canceled) {
      const url = urls.get(m.params.requestId) || `request ${m.params.requestId}`;
      // the site is checked offline: only its own files must load (the theme asks GitHub for
      // the repository's star count, which is left out here)
      (url.startsWith(base) ? failed : external).push(`${m.params.errorText} ${url}`);
    }
    if (m.method === "Runtime.exceptionThrown") {
      const d = m.params.exceptionDetails;
      errors.push((d.exception && d.exception.description) || d.text);
    }
  });
  await send("Page.enable");
  await send("Network.enable");
  await send("Runtime.enable");
  await send("Emulation.setDeviceMetricsOverride", { width: WIDTH, height: HEIGHT, deviceScaleFactor: 1, mobile: false });
  const url = page === "." ? `${base}/` : `${base}/${page}/`;
  await send("Page.navigate", { url });
  await load;
  const { result, exceptionDetails } = await send("Runtime.evaluate", {
    expression: `(${inspect.toString()})()`, awaitPromise: true, returnByValue: true,
  });
  if (exceptionDetails) throw new Error(`${page}: the check itself failed: ${exceptionDetails.text}`);
  const info = result.value;
  const height = Math.min(info.apiTop || info.height, MAX_SHOT);
  const shot = await send("Page.captureScreenshot", {
    format: "png", captureBeyondViewport: true, clip: { x: 0, y: 0, width: WIDTH, height, scale: 1 },
  });
  const file = path.join(out, `${page === "." ? "home" : page.replace(/\//g, "-")}.png`);
  fs.writeFileSync(file, Buffer.from(shot.data, "base64"));
  await cdp.send("Target.closeTarget", { targetId });
  const problems = [
    ...info.problems,
    ...failed.map((f) => `request failed: ${f}`),
    ...errors.map((e) => `JavaScript error: ${e}`),
  ];
  console.log(
    `pages: ${page}: ${info.katex} KaTeX formulas (${info.formulas} from arithmatex), ` +
      `${info.images} images, ${info.codeBlocks} code blocks, ${info.tables} tables; ` +
      `screenshot ${path.relative(process.cwd(), file)} (${WIDTH}x${height}); ` +
      `${problems.length ? problems.length + " problem(s)" : "ok"}`,
  );
  for (const p of problems) console.error(`pages: ${page}: ${p}`);
  for (const n of [...info.notes, ...external.map((e) => `outside the site, not loaded: ${e}`)]) {
    console.log(`pages: ${page}: note: ${n}`);
  }
  return problems.length;
}

// the 404 page, served for a missing address: its stylesheets, scripts and images load and its
// home link leads to the site's home page, wherever the site is served (`base`, a folder)
async function check404(cdp, base, missing) {
  const { targetId } = await cdp.send("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await cdp.send("Target.attachToTarget", { targetId, flatten: true });
  const send = (method, params) => cdp.send(method, params, sessionId);
  const url = `${base}${missing}`;
  const failed = [];
  const errors = [];
  let loaded;
  const load = new Promise((resolve) => (loaded = resolve));
  cdp.on((m) => {
    if (m.sessionId !== sessionId) return;
    if (m.method === "Page.loadEventFired") loaded();
    if (m.method === "Network.responseReceived" && m.params.response.status >= 400 &&
        m.params.response.url !== url) {
      failed.push(`${m.params.response.status} ${m.params.response.url}`);
    }
    if (m.method === "Runtime.exceptionThrown") {
      const d = m.params.exceptionDetails;
      errors.push((d.exception && d.exception.description) || d.text);
    }
  });
  await send("Page.enable");
  await send("Network.enable");
  await send("Runtime.enable");
  await send("Page.navigate", { url });
  await load;
  const { result } = await send("Runtime.evaluate", {
    expression: `(async () => {
      await document.fonts.ready;
      const home = document.querySelector("a.md-header__button.md-logo, a.md-logo");
      return {
        title: (document.querySelector("h1") || {}).textContent || "",
        sheets: [...document.styleSheets].filter((s) => s.href).length,
        header: getComputedStyle(document.querySelector("header") || document.body).position,
        home: home ? home.href : null,
      };
    })()`,
    awaitPromise: true, returnByValue: true,
  });
  await cdp.send("Target.closeTarget", { targetId });
  const info = result.value;
  const problems = [
    ...failed.map((f) => `request failed: ${f}`),
    ...errors.map((e) => `JavaScript error: ${e}`),
  ];
  if (!info.title.includes("404")) problems.push(`no "404" heading (got ${JSON.stringify(info.title)})`);
  if (info.sheets === 0 || info.header === "static") problems.push("the theme's stylesheet did not apply");
  if (info.home !== `${base}/`) problems.push(`home link is ${info.home}, expected ${base}/`);
  console.log(`pages: 404 at ${url}: ${info.sheets} stylesheets, home ${info.home}; ${problems.length ? problems.length + " problem(s)" : "ok"}`);
  for (const p of problems) console.error(`pages: 404 at ${url}: ${p}`);
  return problems.length;
}

async function main() {
  const [site, out, ...pages] = process.argv.slice(2);
  if (!site || !out || pages.length === 0) {
    console.error("usage: node .ci/check_pages.js <site dir> <out dir> <page> [<page> ...]");
    process.exit(2);
  }
  const chromium = process.env.CHROMIUM || "/usr/bin/chromium";
  if (!fs.existsSync(chromium)) {
    console.error(`pages: Chromium not found at ${chromium} (apt-get install chromium, or set $CHROMIUM)`);
    process.exit(3);
  }
  const root = path.resolve(site);
  for (const page of pages) {
    if (!fs.existsSync(path.join(root, page, "index.html"))) {
      console.error(`pages: ${page}/index.html is not in ${root}`);
      process.exit(2);
    }
  }
  fs.mkdirSync(out, { recursive: true });
  const server = await serve(root);
  const preview = await serve(root, "/preview/site/"); // a folder that is not site_url's path
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "check-pages-"));
  const child = spawn(chromium, [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--remote-debugging-pipe",
    `--user-data-dir=${profile}`, "about:blank",
  ], { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const timeoutMs = TIMEOUT_BASE_MS + TIMEOUT_PAGE_MS * (pages.length + 2); // + two 404 checks
  const timer = setTimeout(() => {
    console.error(`pages: no answer from Chromium in ${timeoutMs / 1000} s\n${stderr.slice(-2000)}`);
    child.kill("SIGKILL");
    process.exit(1);
  }, timeoutMs);
  const exited = new Promise((resolve) => child.on("exit", resolve));
  child.on("exit", (code) => {
    if (code && code !== 0) console.error(`pages: Chromium exited with ${code}\n${stderr.slice(-2000)}`);
  });
  let problems = 0;
  try {
    const cdp = devtools(child);
    const base = `http://127.0.0.1:${server.address().port}`;
    for (const page of pages) problems += await checkPage(cdp, base, page, out);
    const elsewhere = `http://127.0.0.1:${preview.address().port}/preview/site`;
    problems += await check404(cdp, base, "/no/such/page/");
    problems += await check404(cdp, elsewhere, "/packages/no-such-package/");
    await cdp.send("Browser.close").catch(() => null);
  } finally {
    clearTimeout(timer);
    server.close();
    preview.close();
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    if (child.exitCode === null) child.kill("SIGKILL");
    fs.rmSync(profile, { recursive: true, force: true });
  }
  console.log(`pages: ${pages.length} pages, ${problems} problem(s)`);
  process.exit(problems ? 1 : 0);
}

main().catch((e) => {
  console.error(`pages: ${e.stack || e}`);
  process.exit(1);
});
