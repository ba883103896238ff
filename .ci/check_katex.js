// Render every formula of the built site's package pages with the bundled KaTeX (as the browser
// would) and fail on the first parse error: `node .ci/check_katex.js <site dir>`.
const fs = require("fs");
const path = require("path");
const katex = require(path.join(__dirname, "..", "docs", "katex", "katex.min.js"));

const site = process.argv[2];
const dir = path.join(site, "packages");
const unescape = (s) =>
  s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, "&");
const pattern = /<(span|div) class="arithmatex">([\s\S]*?)<\/\1>/g;
let errors = 0;
let total = 0;
for (const name of fs.readdirSync(dir).sort()) {
  const file = path.join(dir, name, "index.html");
  if (!fs.existsSync(file)) continue;
  const html = fs.readFileSync(file, "utf8");
  let count = 0;
  for (const m of html.matchAll(pattern)) {
    const text = unescape(m[2]).trim();
    const display = text.startsWith("\\[");
    const tex = text.slice(2, -2);
    count += 1;
    try {
      katex.renderToString(tex, { displayMode: display, throwOnError: true });
    } catch (e) {
      errors += 1;
      console.error(`katex: packages/${name}: ${e.message}`);
    }
  }
  // $ signs around a formula: $$...$$ that arithmatex read as $ + inline formula + $
  const leaks = (html.match(/\$<span class="arithmatex">|<\/span>\$/g) || []).length;
  if (leaks) {
    errors += 1;
    console.error(`katex: packages/${name}: ${leaks} "$" sign(s) left beside a formula ($$...$$ read as inline maths)`);
  }
  total += count;
  console.log(`katex: packages/${name}: ${count} formulas`);
}
console.log(`katex: ${total} formulas, ${errors} errors`);
process.exit(errors ? 1 : 0);
