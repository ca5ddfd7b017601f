// Syntax highlighting with highlight.js, with the languages a workspace
// usually holds (the core alone is small; each language is a few KB).

import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import ini from "highlight.js/lib/languages/ini";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import markdown from "highlight.js/lib/languages/markdown";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";

const languages = { bash, css, diff, go, ini, javascript, json, markdown, python, rust, sql, typescript, xml, yaml };
for (const [name, language] of Object.entries(languages)) hljs.registerLanguage(name, language);

const byExtension: Record<string, string> = {
  sh: "bash", bash: "bash", css: "css", diff: "diff", patch: "diff", go: "go", toml: "ini", ini: "ini",
  js: "javascript", mjs: "javascript", cjs: "javascript", jsx: "javascript", json: "json", md: "markdown",
  py: "python", rs: "rust", sql: "sql", ts: "typescript", tsx: "typescript", html: "xml", xml: "xml",
  svg: "xml", yml: "yaml", yaml: "yaml",
};

/** The text as highlighted HTML (highlight.js escapes it), or null when
 * the file's kind is not known (shown as plain text). */
export function highlight(path: string, text: string): string | null {
  const extension = path.split("/").pop()?.split(".").slice(1).pop()?.toLowerCase() ?? "";
  const language = byExtension[extension];
  if (!language || text.length > 512 * 1024) return null;
  return hljs.highlight(text, { language, ignoreIllegals: true }).value;
}
