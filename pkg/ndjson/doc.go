// Package ndjson is feedpipe's record contract: the records the pipeline's
// binaries read and write, one JSON object per line, and a streaming
// Reader and buffered Writer for them.
//
// # Lines
//
// A stream is UTF-8 text, one record per line, each line ending in "\n"
// ("\r\n" is accepted). Every record is a JSON object whose first two
// members are "type" (a string naming the record type) and "v" (the schema
// version, an integer, 1 today). Blank lines are ignored. A line longer
// than MaxLineBytes (64 MiB) is skipped and reported.
//
// Readers are tolerant: unknown members are ignored and missing members
// are zero values, so a record written by a newer feedpipe, or by hand,
// still reads. Writers are strict: every member of the record's struct is
// written, always, on one line.
//
// A stage consumes the record types it knows and passes every other record
// through unchanged (byte for byte) and in order. A line that is not a
// JSON object is reported on stderr with its line number, skipped, and
// makes the stage exit 1 at the end; the rest of the stream is processed.
//
// # Values
//
// Times are RFC 3339 strings in UTC ("2026-11-21T08:30:00Z", with a
// fraction of a second only when it is not zero) or null when unknown.
// Strings are "" when absent. Lists are [] when empty (a reader also
// accepts null). Numbers are 0 when absent unless said otherwise.
//
// # Record types, in the order they flow
//
//	feed-sub:   subscription (the store's subscriptions.ndjson, feed-sub ls --json)
//	feed-due:   due
//	feed-fetch: fetch (also appended to the store's fetches/YYYY-MM-DD.ndjson)
//	feed-parse: entry, then the fetch record of the same feed with "parse";
//	            feed-parse FILE... writes one for each file (see fetch)
//	feed-scrape: entry for the articles of a website, then its fetch
//	            record with "scrape"; entries of full-text feeds completed
//	feed-dedup: entry with "status", fetch with "dedup"
//	feed-store: new_entry, updated_entry, backfilled_entry (also in
//	            events/YYYY-MM-DD.ndjson);
//	            the stored entry goes to entries/YYYY-MM-DD.ndjson;
//	            feed_disabled, feed_reenabled; these events are all its
//	            stdout carries. A decision for each fetch goes to
//	            decisions/YYYY-MM-DD.ndjson (stdout too with --decisions),
//	            an alias to aliases/YYYY-MM-DD.ndjson
//	feed-media: passes the events on, queueing the files of new entries
//	            of feeds with media settings; feed-media run writes a
//	            media record per try at a file (also appended to the
//	            store's media/YYYY-MM-DD.ndjson)
//	feed-bus:   take adds "bus" to each record it takes from a Redis
//	            stream, and with --store-fetches writes bus_ack records;
//	            put consumes bus_ack (see "bus and bus_ack" below)
//
// Within one feed the entry records come before the fetch record that
// closes the group.
//
// # subscription
//
// One feed or website the user follows.
//
//	feed_id       string  UUIDv5 (URL namespace) of the normalized URL at
//	                      creation; never changes afterwards
//	url           string  the feed's URL, normalized: lower-case scheme and
//	                      host, no default port, no fragment, no
//	                      user:password@ (feed-sub keeps those as auth)
//	name          string  a name the user gave; "" means use the feed's title
//	labels        [string] user labels (OPML folders become labels)
//	source_type   string  rss, atom, json, website, or auto (detect from
//	                      the content; "" means auto); webhook: a source
//	                      with no URL to poll, whose url is "webhook:NAME"
//	                      and whose content is POSTed to feed-serve's
//	                      /webhooks/FEED_ID (docs/design.md#push)
//	interval_sec  int     a fixed polling interval in seconds, clamped to
//	                      [300, 86400]; 0 means the scheduler's policy
//	cron          string  a cron expression (five fields or @hourly,
//	                      @every 2h, ...; UTC): the feed is fetched at its
//	                      fire times; wins over interval_sec; "" if none
//	disabled      bool    true: feed-due skips it (feed-sub disable)
//	created_at    time    when it was added
//	fulltext      bool    feed-scrape fetches each new entry's page for
//	                      its full text
//	scrape        object  the scraper configuration (see "scrape
//	                      configuration" below) of a website source, or
//	                      the content selector of a full-text feed's
//	                      pages; null when there is none
//	user_agent    string  a User-Agent for this feed only; "" means
//	                      feed-fetch's own
//	headers       object  extra request headers, name -> value; null if
//	                      none. They and auth are sent to the feed's host
//	                      only, never to another host it redirects to
//	auth          object  {username, password} for HTTP basic
//	                      authentication; null if none. Listings (feed-sub
//	                      ls --json) and fetch records show the password,
//	                      and the values of headers (but standard ones
//	                      such as Accept), as "(redacted)"
//	allow_private bool    true: the feed may be fetched from a loopback,
//	                      private or link-local address (an intranet, a
//	                      local server; feed-sub add --allow-private);
//	                      false: such an address is refused, unless every
//	                      feed may (FEEDPIPE_ALLOW_PRIVATE=1). feed-fetch
//	                      and feed-scrape take it from the store's
//	                      subscription, not from a due record
//	min_interval_sec int  the shortest interval the scheduler may choose
//	                      for this feed; 0 means the global one; it can
//	                      narrow the global clamps, never widen them
//	max_interval_sec int  the longest; 0 means the global one
//	paused_until  time    no fetch before this time (feed-sub pause); null
//	                      when not paused
//	media         object  which files of its new entries feed-media
//	                      downloads (feed-sub set --media); left out of
//	                      the line when the feed has no media settings:
//	    types             [string] the media types taken, type/subtype or
//	                              type/* (audio/*, video/mp4), lower case;
//	                              [] for no enclosure
//	    max_bytes         int     the most bytes of one file; 0 means
//	                              feed-media's --max-file-size
//	    images            bool    also the images the entries' content
//	                              links to (img src)
//	push          string  off (never subscribe at a WebSub hub), preferred
//	                      (subscribe when the feed names a hub, and poll it
//	                      once a day while the subscription lives) or only
//	                      (no poll while it lives); "" is preferred.
//	                      Left out of the line when ""
//	                      (docs/design.md#push)
//	backfill      bool    walk the feed's archive (RFC 5005) into the
//	                      store (docs/design.md#backfill); left out of the
//	                      line when false
//	webhook_secret string a webhook source's secret: the key of the
//	                      HMAC-SHA256 a POST must be signed with; left out
//	                      of the line when "". Listings show it
//	                      "(redacted)"
//
// feed-sub ls --json adds what its table shows of each feed's state, from
// the store's feed state (feed-store keeps it):
//
//	state         string  the scheduler's state: healthy, cooling_down,
//	                      backoff, paused (Retry-After, an open circuit, a
//	                      pause) or disabled (for errors: see
//	                      disabled_reason); "" before the first decision.
//	                      "disabled" above is the subscription's own flag,
//	                      set by hand
//	state_reason  string  the reason of the scheduler's last decision, as
//	                      in decision (retry_after, circuit_open, ...)
//	disabled_reason string why the scheduler disabled the feed, as in
//	                      feed_disabled; "" unless state is disabled
//	consecutive_failures int  failed fetches in a row
//	last_error    object  the last fetch's error {class, code, message}
//	                      (see fetch); null if it succeeded or none was made
//	last_fetch_at time    the last fetch; null if never fetched
//	next_fetch_at time    when feed-due lists it next (a time past: now;
//	                      created_at for a feed never fetched; paused_until
//	                      when later); null when it is not fetched by
//	                      itself: disabled by hand, or disabled for errors
//	                      and not probed
//	format        string  what its last body read was: rss, atom, json,
//	                      or html (a website); "" before one was read
//	format_version string the version the document states (as in the
//	                      fetch's parse.version)
//	content_type  string  the Content-Type that body was served with
//	publisher     string  who publishes it, as parse.publisher says
//	                      (docs/design.md#mapping); "" when unknown
//	push_state    object  the feed's push (docs/design.md#push), left out
//	                      when it has none:
//	    mode              string  off, preferred or only (push above);
//	                              only for a webhook source
//	    hub, topic        string  the WebSub hub subscribed at, and the
//	                              topic; "" for a webhook source, or a feed
//	                              whose hub is known but not asked yet
//	    state             string  requested (asked, not verified),
//	                              verified, denied (by the hub: reason),
//	                              failed (the hub refused or could not be
//	                              reached: reason; asked again later); ""
//	                              when not asked
//	    live              bool    pushes come: verified, the lease running,
//	                              and no poll since the last push found
//	                              what pushes had missed; feed-due then
//	                              polls the feed once a day (none with
//	                              push only). A webhook source that is
//	                              not disabled
//	    verified_at       time    the hub's last verification; null before
//	    lease_end         time    when the lease ends; null before one
//	    last_push_at      time    the last body feed-serve took for the
//	                              feed; null before one
//	    pushes            int     bodies taken
//	    missed_at         time    the last poll that found entries no push
//	                              had brought; null for none
//	    reason            string  the hub's reason for a denial, or its
//	                              answer to a refused request; "" for none
//	    endpoint          string  a webhook source's path on feed-serve,
//	                              /webhooks/FEED_ID; left out otherwise
//	walk          object  the feed's archive walk (RFC 5005,
//	                      docs/design.md#backfill), left out when the
//	                      feed names no archive and none was asked for:
//	    state             string  "" (never walked), asked (feed-sub
//	                              backfill), walking, done, stopped
//	    kind              string  the relation the walk follows:
//	                              prev-archive (§4) or next (§3)
//	    head, head_kind   string  the current document's first link to its
//	                              history, and its relation
//	    head_read         bool    the head's page was read
//	    next_url          string  walking: the page read next; stopped by
//	                              a broken link: that page; "" otherwise
//	    pages, entries    int     pages the walk read, entries it stored
//	    pages_today       int     pages claimed since 00:00 UTC (20 a day
//	                              at most)
//	    started_at, ended_at
//	                      time    when the walk started and ended; null
//	                              before
//	    reason            string  why it ended: "end: ...", "caught up:
//	                              ...", "loop: ...", "broken link: ..."
//	link          string  the site it links to (its home page), as
//	                      parse.link says of its last body read; ""
//	                      when unknown
//	warnings      [string] what the parse of its last body read
//	                      repaired or left out (parse.warnings); [] for
//	                      none. A feed with warnings is read, not healthy:
//	                      its status_text says how many
//
// # due (feed-due)
//
// One feed to fetch now.
//
//	feed_id, url, source_type, name, labels, fulltext, scrape, user_agent,
//	headers, auth, allow_private  as in the feed's subscription
//	scheduled_at  time    when the fetch became due: the feed's
//	                      next_fetch_at, its creation for a feed never
//	                      fetched, or now when forced; stable across
//	                      replays of the same due record
//	reason        string  new (never fetched), scheduled (its time has
//	                      come, also the probe of a feed disabled for
//	                      errors), manual (feed-sub refetch) or forced
//	                      (--all, --feed); archive: url is a page of the
//	                      feed's archive, not the feed (a backfill walk,
//	                      docs/design.md#backfill; scheduled_at null:
//	                      the page is claimed by its URL, fetched once);
//	                      file in the fetch record of a file feed-parse
//	                      read, push in that of a pushed body (see fetch)
//	validators    object  {etag, last_modified}: the cache validators of
//	                      the last response that carried them, sent as
//	                      If-None-Match and If-Modified-Since; "" if none
//	item_limit    int     keep only this many most recent entries: 20 on a
//	                      first fetch or one more than 15 days after the
//	                      last success; 0 means no limit
//	last          object  what the last fetches found, from the feed state:
//	    body_sha256       string  the last body's SHA-256 ("" if none): a
//	                              200 with the same body is "unchanged"
//	    content_length    int     the last body's length: what a 304 saves
//	    moved_to          string  the URL the last fetches were moved to
//	                              permanently (301, 308); "" if not moved
//	    moved_count       int     how many fetches in a row were moved there
//	bus           object  the Redis stream entry the record was taken
//	                      from, when feed-bus take wrote it; left out of
//	                      the line otherwise (see "bus and bus_ack").
//	                      feed-fetch keeps it in the fetch record's due,
//	                      so that feed-bus put knows which due record a
//	                      fetch answers
//
// # fetch (feed-fetch, completed by feed-parse and feed-dedup)
//
// The outcome of one fetch. feed-parse FILE... writes one for each payload
// file it reads, after the file's entries, as if the file had been
// fetched (its origin is a file: due.reason "file"): fetched_at the
// file's modification time, fetch_id a UUIDv7 of that time whose other
// bits are a hash of the body (the same file, the same id), due {feed_id,
// url, reason} and url, requested_url from --base-url and --feed-id,
// http_status 200, content_type (--content-type), content_length and
// parse; the other members are empty, body_ref null (the body is in no
// store) and body_sha256 "" among them. feed-dedup and feed-store take it
// as a fetch whose body was parsed; feed-parse passes it through.
//
// A body pushed to feedpipe (a WebSub hub's content distribution, a POST
// to a webhook source) gets a fetch record too, written by feed-serve to
// the store's spool/ and handed on by the next feed-fetch, which appends
// it to fetches/ as its own: origin websub or webhook, due {feed_id, url,
// source_type, name, labels, fulltext, scrape, reason "push"}, requested_url
// and url the topic (the distribution's Link rel=self, else the
// subscription's topic) or the webhook source's URL (webhook:NAME; the
// callback's secret id is recorded nowhere), fetched_at when it arrived,
// http_status 200,
// response_headers the POST's (its signature left out), request_headers
// {}, content_type, body_ref, body_sha256 and content_length of the body
// kept in the raw store. feed-store stores its entries as any, but takes
// nothing from it for the feed's schedule: a push is no poll.
//
//	fetch_id         string  UUIDv7 (time-ordered); ties together the log
//	                         lines of all stages about this fetch
//	due              object  the due record this fetch answers, its password
//	                         and the values of its headers "(redacted)"
//	requested_url    string  the URL asked for
//	url              string  the final URL, after redirects
//	redirects        [object] each hop: {url, status} of a response that
//	                         redirected, in order; [] if none
//	                         (these URLs, and the due's, never hold a
//	                         user:password@: it is sent as basic auth)
//	fetched_at       time    when the request started
//	duration_ms      int     how long it took, body included
//	http_status      int     the final response's status; 0 if no response
//	                         came (network error)
//	not_modified     bool    the server answered 304: nothing changed
//	request_headers  object  name -> value as sent; Authorization left out,
//	                         and every value "(redacted)" but those of the
//	                         standard User-Agent, Accept, Accept-Encoding,
//	                         If-None-Match and If-Modified-Since
//	response_headers object  name -> value as received; repeated headers
//	                         joined with ", "
//	body_ref         object  {storage: "localfs", key:
//	                         "raw/YYYY-MM-DD/<sha256>.zst"} where the body is
//	                         stored; null when there was no body (304, no
//	                         response) or it is in no store (a file
//	                         feed-parse read)
//	body_sha256      string  hex SHA-256 of the body as stored (decoded,
//	                         exactly as the publisher meant it)
//	content_type     string  the Content-Type header
//	content_length   int     the body's length in bytes, decoded
//	truncated        bool    the body was cut at the size limit
//	unchanged        bool    a 200 whose body is the same as the last
//	                         fetch's: nothing to parse
//	bytes_saved      int     for a 304: the length of the body it spared
//	                         (the last body's); 0 otherwise
//	retry_after_sec  int     the Retry-After the server asked for, in
//	                         seconds from fetched_at (a date rounded up, a
//	                         slow answer's time added); 0 if none
//	moved_to         string  where every hop of the redirect chain, all 301
//	                         or 308, led; "" when not moved permanently
//	moved_count      int     fetches in a row moved to moved_to, this one
//	                         included
//	new_url          string  moved_to, once moved_count reaches feed-fetch's
//	                         --redirect-threshold: feed-store makes it the
//	                         subscription's URL (the feed id stays); ""
//	                         otherwise
//	error            object  null on success, else {class, code, message}:
//	                         class transient (timeouts, 5xx, resets, DNS),
//	                         permanent (404, 410, bad URL, bad certificate),
//	                         rate_limited (429, 503 with Retry-After),
//	                         blocked (403, bot challenges; address_refused:
//	                         a private address this machine refuses without
//	                         --allow-private, no failure of the feed) or
//	                         parse (the body is not a feed); code a short
//	                         machine name such as http_404, timeout,
//	                         not_a_feed, too_many_redirects (then
//	                         http_status and url are those of the redirect
//	                         not followed);
//	                         message one line for people
//	origin           string  websub or webhook: the body was pushed, not
//	                         fetched (above); left out of the line for a
//	                         fetch
//	parse            object  null until feed-parse parsed the body, else:
//	    format            string  rss, atom or json; ndjson for a body of
//	                              entry records, one a line (a webhook
//	                              source's POST, "NDJSON bodies" below)
//	    version           string  the format's version: for RSS what the
//	                              rss element says (0.91, 0.92, 2.0, ...),
//	                              0.90 and 1.0 for RDF, 1.1 for RSS 1.1;
//	                              0.3 or 1.0 for Atom; 1.0 or 1.1 for JSON
//	                              Feed; "" when the document does not say
//	    charset           string  the character encoding the body was read
//	                              as: utf-8, utf-16le, windows-1251, ...
//	    title, link, description, language
//	                      string  the feed's own; link is its home page,
//	                              absolute and normalized
//	    image             string  URL of the feed's image (RSS image,
//	                              Atom logo or icon, itunes:image, JSON
//	                              Feed icon); "" if none
//	    publisher         string  who publishes the feed:
//	                              dc:publisher, else the feed's title,
//	                              else its managingEditor or author
//	    self              string  the feed's own URL as it states it (Atom
//	                              link rel=self, JSON Feed feed_url); "" if
//	                              it does not
//	    hubs              [string] its WebSub hubs (link rel=hub, JSON
//	                              Feed hubs)
//	    prev_archive, next_archive, current
//	                      string  RFC 5005 archive links: the previous and
//	                              next archive document and the current
//	                              feed; "" if none
//	    next              string  RFC 5005 §3 paged feeds: the rel="next"
//	                              page (older entries; JSON Feed's
//	                              next_url); left out of the line when
//	                              there is none
//	    ttl_minutes       int     RSS <ttl>; 0 if none
//	    skip_hours        [int]   RSS <skipHours>, GMT hours 0-23
//	    skip_days         [string] RSS <skipDays>
//	    items             int     items in the document
//	    entries           int     entry records written (after item_limit)
//	    newest_published, oldest_published
//	                      time    range of the items' publication times
//	    warnings          [string] what was recovered from, one line each:
//	                              charset guesses, characters and entities
//	                              repaired, a document cut short, dates
//	                              that cannot be read or lie in the future
//	    error             string  why the body could not be parsed; "" if it
//	                              was
//	dedup            object  null until feed-dedup saw the fetch, else
//	                         {new, updated, unchanged, aliases}: how many
//	                         of its entries were new, changed, already
//	                         stored, or (--cross-feed) passed on as
//	                         aliases of another feed's entry; and
//	                         unchanged_uids [string], the entry_uids of
//	                         the unchanged ones, which feed-dedup dropped:
//	                         feed-store counts their sighting (last_seen,
//	                         seen_count)
//	scrape           object  null unless feed-scrape worked on the fetch (a
//	                         website source, or a feed with fulltext), else:
//	    mode              string  direct or list (a website's discovery
//	                              mode), or fulltext
//	    pages_fetched     int     pages feed-scrape fetched for the source:
//	                              further list pages, articles, full-text
//	                              pages (the source's own page is this
//	                              fetch)
//	    articles_found    int     article links found on the list pages
//	                              (at most item_limit), 1 in direct mode,
//	                              the feed's entries for fulltext
//	    known             int     of those, already stored: not fetched
//	    new               int     entries written from pages extracted
//	    rejected          int     articles (or further list pages) left
//	                              out, each for a reason
//	    rejections        [object] {url, reason, message} of the first 50
//	                              of them. reason is one of invalid_url,
//	                              other_site, robots_disallowed,
//	                              fetch_failed, not_html, missing_title,
//	                              title_too_long, future_date, too_old,
//	                              no_content; message is one line for
//	                              people. A rejected article fails
//	                              neither the source nor the run; a
//	                              full-text entry whose page is rejected
//	                              goes on as its feed gave it
//	    rejected_before   int     list mode: articles rejected by an
//	                              earlier run for what the page held (or
//	                              robots.txt), with the same scraper
//	                              configuration, within 7 days: not
//	                              fetched again, and they keep no
//	                              pagination going
//	    error             string  why the source could not be scraped at
//	                              all (an invalid scrape configuration, an
//	                              unreadable payload), also set as the
//	                              record's error of class parse; "" if it
//	                              could
//	page             object  null for the fetch of a subscription's own URL.
//	                         Set in the fetch records feed-scrape appends to
//	                         fetches/ for the pages it fetches itself, which
//	                         it never writes to stdout (a feed's schedule
//	                         follows its own fetches only) and drops when a
//	                         replay brings them back:
//	    role              string  list (a further list page), article (an
//	                              article of a list page) or fulltext (a
//	                              feed entry's page)
//	    source_fetch_id   string  the fetch of the source it was fetched for
//	    entry_uid         string  the entry the page was fetched for; "" for
//	                              a list page
//
// # entry (feed-parse, feed-scrape; feed-dedup adds status; feed-store adds lineage)
//
// One normalized item of a feed.
//
//	entry_uid       string  16 lower-case hex digits: xxhash64 of the feed
//	                        id and the item's own id (Atom id, RSS guid,
//	                        JSON Feed id) when it has a usable one, else of
//	                        the feed id, link, title and publication time
//	feed_id         string  the feed it came from
//	native_id       string  the item's own id as the feed gives it; "" if
//	                        none. For an article scraped from a website,
//	                        its URL (normalized, without tracking
//	                        parameters): as the list page links it, or the
//	                        canonical URL a direct page declares
//	canonical_link  string  the item's link, absolute and normalized,
//	                        without tracking parameters (utm_*, fbclid,
//	                        ...; see feed-parse --help)
//	title           string  the title, text or HTML as the feed gives it
//	summary         string  the description or summary, HTML or text
//	content         string  the full content when the feed gives it
//	                        (content:encoded, Atom content, content_html)
//	authors         [object] {name, email, uri}, any of them ""
//	categories      [string] categories or tags, without repeats
//	enclosures      [object] {url, type, length}: attached media; length
//	                        0 if unknown
//	published       time    when the item was published; null if the feed
//	                        does not say or says it in a form we cannot read
//	updated         time    when it was last updated; null if unknown
//	content_hash    string  16 hex digits: xxhash64 of title, summary,
//	                        content and links, white space collapsed; a
//	                        content_hash never stored for a known entry_uid
//	                        is an update. For an entry whose content
//	                        feed-scrape filled in from its page, the hash
//	                        of the entry as its feed gave it, so that the
//	                        next fetch of the same item is known
//	raw_ref         object  {fetch_id, offset, length}: the fetch whose
//	                        payload held the item, and the item's bytes in
//	                        that payload as stored: body[offset:offset+
//	                        length] is its item or entry element (for JSON
//	                        Feed its object); offset and length 0 when the
//	                        item's place in the payload is not known. An
//	                        article of a website in list mode points at
//	                        the fetch of its own page (a fetch record with
//	                        "page", in fetches/)
//	derivations     [object] what feed-scrape derived from the text of a
//	                        website's article or a full-text entry
//	                        (docs/design.md#scraping); left out of the
//	                        line when nothing was:
//	    kind              string  keywords
//	    extractor         string  the name of the extractor (feedpipe-tf)
//	    version           string  its version: the same text and version
//	                              always give the same keywords
//	    keywords          [object] {term, score}, best first: the words of
//	                              the title and text that are not stop
//	                              words, score = occurrences / words
//	status          string  set by feed-dedup and feed-store: new or
//	                        updated; backfilled, set by feed-store, for
//	                        an entry stored from an archive page (RFC
//	                        5005: history, docs/design.md#backfill),
//	                        whose first_seen is its published time (else
//	                        its updated time, else the page's fetch), so
//	                        that what orders by first_seen (the Google
//	                        Reader API, feed-read --new) keeps it with
//	                        the past; "" before dedup. feed-dedup
//	                        --cross-feed sets alias on a new entry whose
//	                        canonical link was stored from another feed:
//	                        feed-store records an alias record for it
//	                        instead of storing it
//	alias_of        object  with status alias: {feed_id, entry_uid} of the
//	                        entry first stored with the link; left out of
//	                        the line otherwise
//	first_seen      time    set by feed-store: when the entry was first
//	                        seen (the fetched_at of that fetch; kept
//	                        across updates)
//	last_seen       time    set by feed-store: when this version was seen
//	seen_count      int     set by feed-store: in how many fetches the
//	                        entry had been seen, this one included, when
//	                        this version was stored. The line is never
//	                        rewritten: the catalog's entries table goes
//	                        on counting the sightings of an unchanged
//	                        entry (docs/design.md#deduplication)
//
// # new_entry and updated_entry (feed-store)
//
// One event per entry version durably stored, new_entry the first time an
// entry_uid is stored and updated_entry when its content changed. The
// events are what the pipeline's stdout carries to its consumers, with
// what a consumer needs to file and show an entry without a lookup: its
// feed's name and labels, its title and summary (docs/design.md#events).
//
//	entry_uid, feed_id, title, summary, canonical_link, published,
//	content_hash       as in the entry
//	feed_name  string   the feed's name: the subscription's, else the
//	                    feed's own title; "" when it has neither yet
//	labels     [string] the subscription's labels; [] when it has none
//	                    (or the subscription is gone)
//	raw_refs   [object] the entry's raw_ref
//	ingested_at time    when it was stored
//	stored_in  string   the entries file holding the full entry, such as
//	                    "entries/2026-11-21.ndjson"
//
// # backfilled_entry (feed-store)
//
// An entry stored from a page of the feed's archive (RFC 5005 §4 archived
// feeds, §3 paged feeds; docs/design.md#backfill): history, not news. It
// has the members of new_entry and goes where new_entry goes (stdout,
// events/); a consumer that wants news only reads new_entry. An archive
// never updates an entry already stored: the live feed's version wins, so
// there is no backfilled update.
//
// # NDJSON bodies
//
// A body of entry records, one a line (served as application/x-ndjson,
// or whose first line that is not blank is an object of type entry), is
// a document of parse.format "ndjson" to feed-parse: what a webhook
// source may POST. Each line is read as an entry record, tolerantly, and
// then taken as a feed's item would be: a line of another type, or whose
// feed_id is another feed's, is skipped with a warning; entry_uid and
// content_hash are made again by the rules of every entry (its native_id,
// else the entry_uid it came with, is its native id); raw_ref points at
// its line; texts lose control characters; links and URIs that are not
// http(s) are dropped; what feed-dedup and feed-store set (status,
// first_seen, last_seen, seen_count, alias_of) and derivations are
// dropped. A body with no entry line is not a feed.
//
// # alias (feed-store)
//
// An entry not stored because its canonical link had been stored first
// from another feed (feed-dedup --cross-feed; docs/design.md#deduplication): the duplicate
// is recorded, never dropped silently. feed-store writes it to the store's
// aliases/YYYY-MM-DD.ndjson (not to stdout), once per feed_id and
// entry_uid; later versions of the entry are not recorded again.
//
//	feed_id, entry_uid, canonical_link, title, published, content_hash,
//	raw_ref            as in the entry that was not stored
//	alias_of   object   {feed_id, entry_uid}: the entry stored first with
//	                    this canonical link, from another feed
//	recorded_at time    when the alias was recorded
//	stored_in  string   the aliases file holding this record, such as
//	                    "aliases/2026-11-21.ndjson"
//
// # decision (feed-store)
//
// The scheduler's decision for one feed, written after each fetch record
// feed-store stores (docs/scheduler.md §7) to the store's
// decisions/YYYY-MM-DD.ndjson, and to stdout with feed-store --decisions;
// logged with the same fields, at debug. It is data for people and tools (feed-due --explain prints the
// stored one in words); nothing in the pipeline reads it.
//
//	feed_id          string  the feed
//	fetch_id         string  the fetch the decision follows
//	decision         string  fetch_now, defer, backoff or pause
//	reason           string  new_feed, retry_after, http_error, parse_error,
//	                         budget_exceeded, ewma_stable, manual,
//	                         new_entries, not_modified, no_new_entries,
//	                         posting_rate, daily_slot, fixed, cron,
//	                         paused, disabled, address_refused
//	                         (docs/design.md#states-and-decisions)
//	at               time    when it was decided
//	next_at          time    when the feed is due next; null: never
//	                         (disabled and not probed)
//	until            time    the end of a backoff or pause; null otherwise
//	state            string  healthy, cooling_down, backoff, paused or
//	                         disabled: the feed's state after the decision
//	event            string  feed_disabled, feed_reenabled, circuit_open,
//	                         or "" for none
//	disabled_reason  string  why the feed is disabled; "" when it is not
//	inputs           object  what the decision used; durations in seconds,
//	                         0 / "" / false / [] when it did not apply:
//	    policy               string  adaptive, seed or fixed:DURATION
//	    override             string  the feed's override that applied, such
//	                                 as "interval 1h", "cron 0 * * * *",
//	                                 "min 10m", "paused"
//	    outcome              string  fetch, manual or new
//	    http_status          int     the fetch's status; 0 without response
//	    not_modified         bool    a 304 answer
//	    truncated            bool    the body was cut at the size cap: the
//	                                 interval is at least ×b_up
//	                                 (docs/design.md#failures)
//	    error_class          string  the fetch's error class
//	    error_code           string  the fetch's error code
//	    new_entries          int     entries stored new from the fetch
//	    items                int     items in the feed document
//	    interval_before_sec  int     the interval before the decision
//	    interval_after_sec   int     the interval after it (before jitter
//	                                 and skip windows)
//	    min_sec, max_sec     int     the clamps in force
//	    ewma_secs            number  EWMA of the gaps between publication
//	                                 times; 0 without two
//	    rate_per_day         number  adaptive: the estimated posting rate
//	    scale                number  adaptive: the global scale s
//	    base_sec             int     adaptive: s/sqrt(rate_per_day)
//	    profile_factor       number  adaptive: how much the hour-of-week
//	                                 profile stretched (>1) or shortened
//	                                 (<1) the interval
//	    tail_cap_sec         int     adaptive: the gap the tail rule
//	                                 shortened the interval to, when it
//	                                 bound
//	    window_cap_sec       int     adaptive: the cap that keeps items
//	                                 from leaving the feed's window unseen,
//	                                 when it bound
//	    pattern_gain         number  adaptive, a clear posting pattern:
//	                                 the share of the mean delay of evenly
//	                                 spaced polls that polls placed by the
//	                                 pattern promise; 0 without one (and
//	                                 the four fields below empty or 0)
//	    pattern_hours        string  the UTC hours in which the feed posts
//	                                 above its average rate, "08-12,14-17";
//	                                 "" until it has been watched 3 days
//	    pattern_days         string  the publisher's days on which it posts
//	                                 at least half its average, "Mon-Fri";
//	                                 "" until it has been watched 14 days
//	    day_start            int     the UTC hour its days start at, in its
//	                                 night; 0 is midnight
//	    poll_weight          number  the rate of polls at the fetch, times
//	                                 that of evenly spaced polls at the
//	                                 feed's rate
//	    slot                 string  adaptive, reason daily_slot: the time
//	                                 of day ("15:04" UTC) by which the
//	                                 feed's items have appeared on its last
//	                                 days; "" otherwise
//	    cron_next_at         string  cron: the fire time chosen
//	    cron_error           string  cron: why the expression was not used
//	    ttl_sec              int     the feed's RSS ttl (capped at max_sec)
//	    max_age_sec          int     the response's Cache-Control max-age or
//	                                 Expires (capped at max_sec)
//	    floor_sec            int     the floor they set: no fetch sooner
//	    retry_after_secs     int     Retry-After honoured
//	    skip_hours           [int]   the feed's skipHours (GMT)
//	    skip_days            [string] the feed's skipDays
//	    skip_moved_from      time    where a skip window moved next_at from
//	    skip_ignored         bool    the skip windows cover every hour and
//	                                 were ignored
//	    backoff_step         int     the backoff step
//	    backoff_sec          int     the backoff delay
//	    jitter_sec           int     the jitter added (may be negative)
//	    consecutive_failures int     failed fetches in a row
//	    error_budget         number  tokens left of the error budget
//	    error_budget_size    number  its size
//	    probe                bool    the next fetch probes a disabled feed
//
// # feed_disabled and feed_reenabled (feed-store)
//
// A feed left service (feed_disabled: a permanent error such as 404 or
// 410, or too many failures in a row) or came back (feed_reenabled: a
// probe of a feed disabled for errors answered). Also written to
// events/YYYY-MM-DD.ndjson. feed-sub ls shows a disabled feed and why;
// feed-sub enable puts it back in service.
//
//	feed_id          string  the feed
//	fetch_id         string  the fetch that disabled or re-enabled it
//	url              string  the feed's URL
//	at               time    when it happened
//	disabled_reason  string  why it was disabled (feed_reenabled: why it
//	                         had been)
//	error            object  the fetch's error {class, code, message}
//	                         (see fetch); null for feed_reenabled
//	next_at          time    the next fetch (a probe of a disabled feed);
//	                         null when it is not probed
//
// # media (feed-media)
//
// One try at one file of an entry: an enclosure, or an image its content
// links to, of a feed with media settings. feed-media run writes one to
// stdout and to the store's media/YYYY-MM-DD.ndjson for each try, by the
// day it ended; a file stored is at media/<2 hex digits>/<sha256>, never
// visible before it is whole and checked.
//
//	feed_id       string  the feed of the entry
//	entry_uid     string  the entry the file belongs to
//	kind          string  enclosure or image
//	url           string  the file's URL as the entry gives it
//	final_url     string  the URL it was fetched from, after redirects;
//	                      "" when no request was answered
//	status        string  stored (the file is in the store), refused (it
//	                      breaks the feed's settings or feedpipe's rules:
//	                      not tried again), failed (it cannot be had, or
//	                      failed too often: not tried again), retrying
//	                      (cut short or failed for now: tried again later,
//	                      resumed where it can be)
//	reason        string  why, when not stored: a short code: http_NNN,
//	                      too_large, wrong_type, no_type, address_refused,
//	                      robots_disallowed, invalid_url, the codes of a
//	                      fetch's error (timeout, connection_reset, ...),
//	                      short_body (the body ended before its length),
//	                      bad_range (a 206 not of the rest asked for),
//	                      budget (the day's byte budget is spent), disk_floor
//	                      (the disk is too full), stopped (feed-media was
//	                      stopped), storage (the store could not be
//	                      written); "" when stored
//	message       string  the reason for people, one line
//	http_status   int     the final response's status; 0 if none
//	key           string  media/<2 hex digits>/<sha256>: where the file is
//	                      in the store; "" unless stored
//	sha256        string  hex SHA-256 of the file; "" unless stored
//	bytes         int     stored: the file's size; retrying: the bytes
//	                      held for a resume; refused: those received
//	                      before the cut
//	content_type  string  the file's media type, as served (or, when the
//	                      server says only application/octet-stream,
//	                      as its first bytes show it); "" if unknown
//	resumed_from  int     where in the file this try resumed, with a Range
//	                      request checked by If-Range; 0 from the start
//	restarted     bool    the bytes held from an earlier try were dropped:
//	                      the file changed since (its ETag or
//	                      Last-Modified), or the server would not resume
//	attempt       int     which try at the file this is, from 1
//	started_at    time    when the try began
//	at            time    when it ended
//	duration_ms   int     how long it took
//	stored_in     string  the media file holding this record, such as
//	                      "media/2026-11-29.ndjson"
//
// # bus and bus_ack (feed-bus)
//
// Between machines a pipe is a Redis stream (docs/bus.md). feed-bus take
// writes each record it takes from a stream with one more member, last:
//
//	bus        object   {stream, group, id}: the stream it was taken from
//	                    (its name without the deployment's prefix), the
//	                    consumer group that took it, and the stream
//	                    entry's id ("1764316800000-0"). A record that had
//	                    a bus member has it replaced: a reader takes the
//	                    last of repeated members
//
// feed-bus put acknowledges the entry a bus member names when it appends
// the record that carries it to the next stream, in the same Redis
// transaction; for a fetch record, the entry of its due (due.bus), which
// feed-fetch carries over. Stages that consume a record (feed-dedup and
// feed-store consume entries and fetch records) cannot carry it, so
// feed-bus take --store-fetches, which feeds them on the coordinator,
// writes after each complete group of records (a feed's entries, then
// its fetch record) a record of its own, which feed-dedup, feed-store and
// feed-media pass through once they have done with what came before it:
//
//	bus_ack    the entries of stream, taken by group, to acknowledge:
//	    stream        string  the stream (without prefix)
//	    group         string  the consumer group
//	    ids           [string] the entries' ids
//
// feed-bus put consumes bus_ack records. feed-scrape --events, a worker
// on the events stream, writes one for each event it consumes without
// an entry to hand on (docs/bus.md, "The full-text worker"), and the
// entries it writes carry their event's bus member; no other stage
// writes or reads them.
//
// # scrape configuration
//
// The "scrape" object of a subscription and of its due records
// (docs/design.md#scraping): how feed-scrape reads a website. Selectors are CSS selectors;
// "a, b" tries a, then b, and the first that matches wins.
//
//	discovery_mode  string  direct: the subscription's URL is the article;
//	                        list: it lists links to articles; "" means
//	                        direct
//	list_config     object  list mode:
//	    article_selector    string  the article links: a elements, or
//	                                elements holding one; required
//	    pagination_selector string  the link to the next list page; "" for
//	                                none
//	    max_pages           int     list pages read per fetch, the first
//	                                included; 0 means 1, at most 100
//	article_config  object  how to read an article page; a selector ""
//	                        means the page's own metadata (og:, article:,
//	                        link rel=canonical) and readability for title
//	                        and content:
//	    title_selector      string  the title (the text of the first match)
//	    content_selector    string  the content: every element it selects,
//	                                as HTML
//	    author_selector     string  the authors: the text of every match,
//	                                split at ",", "&" and " and "
//	    date_selector       string  the publication date: its datetime or
//	                                content attribute, else its text
//	    date_format         string  how the date is written: a Go layout
//	                                ("2006-01-02") or strftime ("%Y-%m-%d");
//	                                "" means any common form
//	    image_selector      string  the lead image (src, content or href)
//	    canonical_selector  string  the article's canonical link (href or
//	                                content)
package ndjson
