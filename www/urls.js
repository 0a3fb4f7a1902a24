// URLs the explorer builds from what a visitor types: plain string work, no DOM, so Node.js
// imports it too (tests/js/regex-bounds.test.mjs).

/**
 * `url` without its trailing slashes, in one backward pass: `url.replace(/\/+$/, '')` tries
 * every slash of a run as a start and runs to its end, quadratic on a long run of slashes
 * followed by anything else (100,000 of them froze the page for seconds).
 */
export function trimSlashes(url) {
  let end = url.length;
  while (end > 0 && url.charCodeAt(end - 1) === 47) end--;
  return url.slice(0, end);
}

/** The Chat Completions URL of an OpenAI-compatible endpoint: `base` itself when it names it. */
export function chatCompletionsUrl(base) {
  return /\/chat\/completions\/?$/.test(base) ? base : `${trimSlashes(base)}/chat/completions`;
}
