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
//	feed-store: new_entry, updated_entry (also in events/YYYY-MM-DD.ndjson);
//	            the stored entry goes to entries/YYYY-MM-DD.ndjson;
//	            feed_disabled, feed_reenabled; these events are all its
//	            stdout carries. A decision for each fetch goes to
//	            decisions/YYYY-MM-DD.ndjson (stdout too with --decisions),
//	            an alias to aliases/YYYY-MM-DD.ndjson
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
//	                      the content; "" means auto)
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
//	min_interval_sec int  the shortest interval the scheduler may choose
//	                      for this feed; 0 means the global one; it can
//	                      narrow the global clamps, never widen them
//	max_interval_sec int  the longest; 0 means the global one
//	paused_until  time    no fetch before this time (feed-sub pause); null
//	                      when not paused
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
//	                      (seed 003 §2.3.1); "" when unknown
//
// # due (feed-due)
//
// One feed to fetch now.
//
//	feed_id, url, source_type, name, labels, fulltext, scrape, user_agent,
//	headers, auth         as in the feed's subscription
//	scheduled_at  time    when the fetch became due: the feed's
//	                      next_fetch_at, its creation for a feed never
//	                      fetched, or now when forced; stable across
//	                      replays of the same due record
//	reason        string  new (never fetched), scheduled (its time has
//	                      come, also the probe of a feed disabled for
//	                      errors), manual (feed-sub refetch) or forced
//	                      (--all, --feed); file in the fetch record of
//	                      a file feed-parse read (see fetch)
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
//	parse            object  null until feed-parse parsed the body, else:
//	    format            string  rss, atom or json
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
//	    publisher         string  who publishes the feed (seed 003):
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
//	                        website's article or a full-text entry (seed
//	                        002); left out of the line when nothing was:
//	    kind              string  keywords
//	    extractor         string  the name of the extractor (feedpipe-tf)
//	    version           string  its version: the same text and version
//	                              always give the same keywords
//	    keywords          [object] {term, score}, best first: the words of
//	                              the title and text that are not stop
//	                              words, score = occurrences / words
//	status          string  set by feed-dedup and feed-store: new or
//	                        updated; "" before dedup. feed-dedup
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
//	                        entry (seed 000 §4.4)
//
// # new_entry and updated_entry (feed-store)
//
// One event per entry version durably stored, new_entry the first time an
// entry_uid is stored and updated_entry when its content changed. The
// events are what the pipeline's stdout carries to its consumers, with
// what a consumer needs to file and show an entry without a lookup (seed
// 004 §3.4: its category and abstract).
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
// # alias (feed-store)
//
// An entry not stored because its canonical link had been stored first
// from another feed (feed-dedup --cross-feed; seed 001 §6): the duplicate
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
//	                         budget_exceeded, ewma_stable, manual (seed
//	                         002 §7), or new_entries, not_modified,
//	                         no_new_entries, posting_rate, fixed, cron,
//	                         paused, disabled
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
//	                                 interval is at least ×b_up (seed 000 §7)
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
// its fetch record) a record of its own, which feed-dedup and feed-store
// pass through once they have done with what came before it:
//
//	bus_ack    the entries of stream, taken by group, to acknowledge:
//	    stream        string  the stream (without prefix)
//	    group         string  the consumer group
//	    ids           [string] the entries' ids
//
// feed-bus put consumes bus_ack records; no other stage writes or reads
// them.
//
// # scrape configuration
//
// The "scrape" object of a subscription and of its due records (seed 001
// §5): how feed-scrape reads a website. Selectors are CSS selectors;
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
