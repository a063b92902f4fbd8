import { contentTypeOf, isApiError, parseAddress, readDeck, type ArtifactAddress, kitAssets, kitDocument, rewriteDeck, safePageUrl, serveFile, type ArtifactReader, type EmbedOptions } from "../../core/plugin-api";
import type { PageServices } from "./artifact";
import { FRAME_PREFIX, frameCsp, type FrameGrant } from "./frames";

const FRAME_HEADERS = { "x-content-type-options": "nosniff", "referrer-policy": "no-referrer", "cross-origin-resource-policy": "cross-origin" };

const plain = (status: number, message: string) => new Response(message, { status, headers: { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store", ...FRAME_HEADERS } });

/**
 * Where the browser loaded a frame link from, with the service's path prefix: the public origin
 * (`SVC_API_PUBLIC_ORIGIN`, its scheme and port as people reach it) when the request came to its host
 * (through the proxy: behind TLS the request itself is http, and `Host` may have lost the port), else
 * the request's own origin (the service reached directly, or under another name) and the prefix.
 */
function frameOrigin(r: { base: string; publicOrigin?: string; url: URL }): string {
  if (r.publicOrigin && new URL(r.publicOrigin).hostname === r.url.hostname) return r.publicOrigin;
  return `${r.url.origin}${r.base}`;
}

/**
 * Answers a request under a deck frame's link (spec 2.10): `index.html` rewritten for the link's reader
 * and wrapped in the kit, `_artifact/<id>/<version>/<path>` an image of another artifact the reader can
 * open, `_slide/<id>/<version>/<n>` a slide's screenshot, anything else a file of the deck's version.
 */
export async function serveFrame(s: PageServices, r: { base: string; publicOrigin?: string; req: Request; url: URL; token: string; path: string; thumbnail: boolean; locale: string; origins: string[] }): Promise<Response> {
  const grant = s.frames.verify(r.token);
  if (grant === "expired") return plain(410, "This link to the slides has expired: reload the page that showed them.");
  if (!grant) return plain(404, "No such link");
  const reader: ArtifactReader = { kind: "identity", id: grant.reader };
  const { path } = r; // decoded by the route (RouteRegistry.dispatch)
  const base = `${frameOrigin(r)}${FRAME_PREFIX}${r.token}/`;
  try {
    if (path === "index.html") {
      const version = await s.artifacts.version(reader, grant.artifactId, grant.version);
      if (version.kind !== "slides") return plain(404, "Not a deck");
      const source = await s.files.text((await s.artifacts.file(reader, grant.artifactId, grant.version, "index.html")).id);
      const theme = await s.artifacts.theme(version);
      const opts: EmbedOptions = {
        locale: r.locale,
        mode: theme?.mode ?? "system",
        chartSize: { width: 1100, height: 480 },
        // a phone shows the slide about 0.28 times its size: a drawing that much smaller keeps its type readable
        compactChartSize: { width: 360, height: 157 },
        links: {
          file: (id, v, p) => `${base}_artifact/${encodeURIComponent(id)}/${v}/${p.split("/").map(encodeURIComponent).join("/")}`,
          screenshot: (id, v, n) => `${base}_slide/${encodeURIComponent(id)}/${v}/${n}`,
        },
        basePath: r.base,
      };
      const rewritten = await rewriteDeck(source, {
        link: async (address) => {
          const shown = await s.embeds.resolve(reader, address);
          return shown ? safePageUrl(address, r.base) : undefined;
        },
        image: async (address) => {
          const resolution = await s.embeds.resolve(reader, address);
          return resolution?.file ? opts.links.file(resolution.artifact.id, resolution.version, resolution.file.path) : undefined;
        },
        embed: async (address) => {
          const shown = await s.embeds.show(reader, address, opts);
          return shown.state === "shown" ? { html: shown.body, title: shown.resolution.part?.kind === "chart" ? shown.resolution.part.chart : shown.title } : undefined;
        },
      });
      const body = kitDocument(rewritten, { kit: kitAssets(), theme, ...(r.thumbnail ? { layout: "thumbnail" as const } : {}) });
      return new Response(body, {
        headers: { "content-type": "text/html; charset=utf-8", "content-security-policy": frameCsp(base, r.origins), "cache-control": "private, no-store", ...FRAME_HEADERS },
      });
    }
    // another artifact's image or slide: only one this deck shows (the link is not a key to the reader's
    // other artifacts): a file the deck names, or an image of an artifact it embeds whole or in part (a
    // document's section shows its images: they were broken)
    const other = /^_artifact\/([^/]+)\/(\d+)\/(.+)$/.exec(path);
    const slide = /^_slide\/([^/]+)\/(\d+)\/(\d+)$/.exec(path);
    if (other || slide) {
      const shown = await deckAddresses(s, reader, grant);
      const [id, v] = [(other ?? slide)![1]!, Number((other ?? slide)![2])];
      const imageOfEmbed = (a: ArtifactAddress) => a.file === undefined && contentTypeOf(other![3]!).startsWith("image/");
      const named = (a: ArtifactAddress) => a.artifactId === id && (a.version === undefined || a.version === v) && (other ? a.file === other[3] || imageOfEmbed(a) : a.part?.kind === "name" && a.part.name === slide![3]);
      if (!shown.some(named)) return plain(404, "No such file");
      const file = other ? await s.artifacts.file(reader, id, v, other[3]!) : await s.artifacts.screenshot(reader, id, v, Number(slide![3]));
      return serveFile(r.req, s.files, file.id, "inline", frameHeaders());
    }
    const file = await s.artifacts.file(reader, grant.artifactId, grant.version, path);
    return serveFile(r.req, s.files, file.id, "inline", frameHeaders(contentTypeOf(path)));
  } catch (err) {
    if (isApiError(err) && err.code === "not_found") return plain(404, "No such file");
    throw err;
  }
}

/** Parsed addresses of recently framed deck versions (versions never change), at most {@link DECK_ADDRESS_CACHE} of them. */
const deckAddressCache = new Map<string, Promise<ArtifactAddress[]>>();
const DECK_ADDRESS_CACHE = 500;

/** The artifact addresses a deck version's index.html contains (links, images, embeds), read once per version. */
function deckAddresses(s: PageServices, reader: ArtifactReader, grant: FrameGrant): Promise<ArtifactAddress[]> {
  const key = `${grant.artifactId}@${grant.version}`;
  let found = deckAddressCache.get(key);
  if (!found) {
    found = readDeckAddresses(s, reader, grant);
    found.catch(() => deckAddressCache.delete(key));
    deckAddressCache.set(key, found);
    if (deckAddressCache.size > DECK_ADDRESS_CACHE) deckAddressCache.delete(deckAddressCache.keys().next().value!);
  }
  return found;
}

async function readDeckAddresses(s: PageServices, reader: ArtifactReader, grant: FrameGrant): Promise<ArtifactAddress[]> {
  const html = await s.files.text((await s.artifacts.file(reader, grant.artifactId, grant.version, "index.html")).id);
  const out: ArtifactAddress[] = [];
  for (const ref of readDeck(html).references) {
    if (!ref.target.startsWith("artifact:")) continue;
    try {
      out.push(parseAddress(ref.target));
    } catch {
      /* refused at publish time: never shown */
    }
  }
  return out;
}

/**
 * The frame's headers for `serveFile` to answer with (its `editHeaders`: the body is a Node stream that
 * must stay in its own response); a deck's own files get the content type of their extension (scripts
 * and styles run only with theirs under nosniff).
 */
function frameHeaders(contentType?: string): (headers: Record<string, string>, status: number) => void {
  return (headers, status) => {
    if (contentType && contentType !== "application/octet-stream" && status < 300) {
      headers["content-type"] = contentType;
      delete headers["content-disposition"];
    }
    Object.assign(headers, FRAME_HEADERS);
    headers["cache-control"] = "private, max-age=300";
  };
}

