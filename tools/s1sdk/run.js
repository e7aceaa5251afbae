// Runs ScreenshotOne's Node SDK against a shotd: TestScreenshotOneNodeSDK (httpd) starts it with
// SHOTD_BASE (http://127.0.0.1:PORT: only the host changed, their paths at the root), the access and secret keys, the page to capture, an
// HTTP proxy with credentials (SHOTD_PROXY) and a directory for the files. Each call's answer is written there; the Go test checks the files.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const screenshotone = require("screenshotone-api-sdk");

const { SHOTD_BASE, SHOTD_ACCESS_KEY, SHOTD_SECRET_KEY, SHOTD_PAGE, SHOTD_OUT, SHOTD_PROXY, SHOTD_S3, SHOTD_S3_KEY, SHOTD_S3_SECRET } =
  process.env;

async function save(name, blob) {
  fs.writeFileSync(path.join(SHOTD_OUT, name), Buffer.from(await blob.arrayBuffer()));
}

async function main() {
  const client = new screenshotone.Client(SHOTD_ACCESS_KEY, SHOTD_SECRET_KEY, SHOTD_BASE);
  const T = screenshotone.TakeOptions;

  // take(): every call is signed the ScreenshotOne way.
  await save("take.png", await client.take(T.url(SHOTD_PAGE).viewportWidth(320).viewportHeight(240).format("png")));
  await save("take.jpg", await client.take(T.url(SHOTD_PAGE).viewportWidth(320).viewportHeight(240).format("jpeg")
    .blockSocials(true).blockBannersByHeuristics(true).hideSelectors(".banner").delay(0)));
  await save("full.png", await client.take(T.url(SHOTD_PAGE).viewportWidth(320).viewportHeight(240)
    .fullPage(true).fullPageScrollBy(200).fullPageScrollDelay(10).fullPageAlgorithm("by_sections")));
  await save("slices.zip", await client.take(T.url(SHOTD_PAGE).viewportWidth(320).viewportHeight(240)
    .fullPage(true).fullPageSlices(true).fullPageSliceHeight(300).fullPageSliceOverlapHeight(20)));
  await save("meta.json", await client.take(T.url(SHOTD_PAGE).viewportWidth(320).viewportHeight(240)
    .responseType("json").metadataPageTitle(true).metadataOpenGraph(true).metadataIcon(true).metadataFonts(true)
    .metadataImageSize(true).metadataHttpResponseStatusCode(true).metadataHttpResponseHeaders(true)
    .metadataContent(true).metadataContentFormat("markdown")));
  await save("waits.png", await client.take(T.url(SHOTD_PAGE).viewportWidth(320).viewportHeight(240)
    .navigationTimeout(20).waitForSelector("h1, p").waitForSelectorAlgorithm("at_least_by_count")
    .scripts("document.title = 'changed'").scriptsWaitUntil("networkidle0", "load")
    .selector("h1").selectorAlgorithm("clip").selectorScrollIntoView(false)
    .failIfRequestFailed("http://127.0.0.1:1/*").failIfContentMissing("Hello")));
  await save("pdf.pdf", await client.take(T.url(SHOTD_PAGE).format("pdf")));
  // format jpg (their name for jpeg), and proxy through the test's proxy, a bypass list with it.
  await save("jpg.jpg", await client.take(T.url(SHOTD_PAGE).viewportWidth(320).viewportHeight(240).format("jpg")));
  await save("proxy.png", await client.take(T.url(SHOTD_PAGE).viewportWidth(320).viewportHeight(240)
    .proxy(SHOTD_PROXY).proxyBypassHosts("bypass.example", "*.cdn.example")));
  // error_on_selector_not_found=false: a selector that matches nothing captures the viewport.
  await save("nosel.png", await client.take(T.url(SHOTD_PAGE).viewportWidth(320).viewportHeight(240).format("png")
    .selector("#missing").errorOnSelectorNotFound(false)));
  // An error answer comes back as the SDK's APIError with ScreenshotOne's code.
  try {
    await client.take(T.url(SHOTD_PAGE).proxy("socks5://127.0.0.1:1080"));
    fs.writeFileSync(path.join(SHOTD_OUT, "error.txt"), "no error");
  } catch (e) {
    fs.writeFileSync(path.join(SHOTD_OUT, "error.txt"), `${e.httpStatusCode} ${e.errorCode}`);
  }

  // store(): store=true with response_type=empty to the test's S3 server (SHOTD_S3, bucket
  // "user"); the SDK reads the object's key and bucket from the answer's headers.
  const stored = await client.store(T.url(SHOTD_PAGE).viewportWidth(320).viewportHeight(240).format("png")
    .storageEndpoint(SHOTD_S3), "sdk/{{uuid}}", "user", undefined, undefined, SHOTD_S3_KEY, SHOTD_S3_SECRET);
  fs.writeFileSync(path.join(SHOTD_OUT, "store.json"), JSON.stringify(stored));

  // animate(): signed too.
  const A = screenshotone.AnimateOptions;
  await save("animate.mp4", await client.animate(A.url(SHOTD_PAGE).format("mp4").duration(1).width(320).height(240)));
  await save("animate.mov", await client.animate(A.url(SHOTD_PAGE).format("mov").duration(1).width(320).height(240)));
  await save("animate.gif", await client.animate(A.url(SHOTD_PAGE).format("gif").duration(1).scenario("scroll")
    .width(320).height(240)));
  // The scroll options their SDK sends: played as one continuous scroll.
  await save("scroll.mp4", await client.animate(A.url(SHOTD_PAGE).format("mp4").duration(1).scenario("scroll")
    .width(320).height(240).scrollDelay(500).scrollDuration(1500).scrollStartImmediately(true).scrollBack(true)
    .scrollBackAfterDuration(800).scrollStartDelay(0).scrollComplete(true).scrollBy(1000)));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(1);
});
