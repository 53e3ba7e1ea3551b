package dates

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// tests are the forms publishers write, with the instant each means; want
// "" for strings that are not dates. They also seed FuzzParse.
var tests = []struct {
	in, want string
}{
	// RFC 822, 1123, 2822 and their variants (RSS pubDate).
	{"Mon, 02 Jan 2006 15:04:05 -0700", "2006-01-02T22:04:05Z"},
	{"Mon, 02 Jan 2006 15:04:05 +0000", "2006-01-02T15:04:05Z"},
	{"Mon, 2 Jan 2006 15:04:05 GMT", "2006-01-02T15:04:05Z"},
	{"Mon, 02 Jan 2006 15:04:05 UT", "2006-01-02T15:04:05Z"},
	{"Mon, 02 Jan 2006 15:04:05 Z", "2006-01-02T15:04:05Z"},
	{"Mon, 02 Jan 2006 15:04:05 EST", "2006-01-02T20:04:05Z"},
	{"Mon, 02 Jan 2006 15:04:05 PDT", "2006-01-02T22:04:05Z"},
	{"Mon, 02 Jan 2006 15:04:05 CEST", "2006-01-02T13:04:05Z"},
	{"Mon, 02 Jan 2006 15:04 +0100", "2006-01-02T14:04:00Z"},
	{"02 Jan 2006 15:04:05 +0000", "2006-01-02T15:04:05Z"},
	{"2 Jan 2006 15:04:05", "2006-01-02T15:04:05Z"},
	{"Mon, 02 Jan 06 15:04:05 +0000", "2006-01-02T15:04:05Z"},
	{"Sun, 06 Nov 94 08:49:37 GMT", "1994-11-06T08:49:37Z"},
	{"Sunday, 06-Nov-94 08:49:37 GMT", "1994-11-06T08:49:37Z"}, // RFC 850
	{"Sun Nov  6 08:49:37 1994", "1994-11-06T08:49:37Z"},       // ANSI C asctime
	{"Mon Jan 2 15:04:05 MST 2006", "2006-01-02T22:04:05Z"},    // Unix date
	{"Tue, 10 Jun 2003 04:00:00 -0400 (EDT)", "2003-06-10T08:00:00Z"},
	{"Tue, 10 Jun 2003 04:00:00 +0200 (CEST)", "2003-06-10T02:00:00Z"},
	{"Tue, 10 Jun 2003 04:00:00 +02:00", "2003-06-10T02:00:00Z"},
	{"Tue, 10 Jun 2003 04:00:00 GMT+2", "2003-06-10T02:00:00Z"},
	{"Tue, 10 Jun 2003 04:00:00 GMT-05:00", "2003-06-10T09:00:00Z"},
	{"Tue, 10 Jun 2003 04:00:00 UTC+05:30", "2003-06-09T22:30:00Z"},
	{"Tue,10 Jun 2003 04:00:00 GMT", "2003-06-10T04:00:00Z"},
	{"Tue, 10 June 2003 04:00:00 GMT", "2003-06-10T04:00:00Z"},
	{"Tue, 10 Sept 2003 04:00:00 GMT", "2003-09-10T04:00:00Z"},
	{"TUE, 10 JUN 2003 04:00:00 GMT", "2003-06-10T04:00:00Z"},
	{"Wed, 31 Dec 1969 23:59:59 GMT", "1969-12-31T23:59:59Z"},
	{"Thu, 01 Jan 1970 00:00:00 GMT", "1970-01-01T00:00:00Z"},
	{"Sat, 31 Dec 2016 23:59:60 GMT", "2016-12-31T23:59:59Z"}, // a leap second
	{"Mon, 02 Jan 2006 24:00:00 GMT", "2006-01-03T00:00:00Z"},
	{"Mon, 02 Jan 2006 15:04:05.123 GMT", "2006-01-02T15:04:05.123Z"},
	{"Wed, 02 Oct 2002 13:00:00 +0000 ", "2002-10-02T13:00:00Z"},
	{"Thu, 14 May 2020 10:00:18 Z", "2020-05-14T10:00:18Z"},
	{"Mon, 2 Jan 2006 3:04:05 PM GMT", "2006-01-02T15:04:05Z"},
	{"Mon, 2 Jan 2006", "2006-01-02T00:00:00Z"},
	// A wrong day of the week is not worth losing the date for.
	{"Fri, 02 Jan 2006 15:04:05 GMT", "2006-01-02T15:04:05Z"},

	// ISO 8601 and W3C-DTF (Atom, dc:date, JSON Feed).
	{"2006-01-02T15:04:05Z", "2006-01-02T15:04:05Z"},
	{"2006-01-02T15:04:05.999999999Z", "2006-01-02T15:04:05.999999999Z"},
	{"2006-01-02T15:04:05+01:00", "2006-01-02T14:04:05Z"},
	{"2006-01-02T15:04:05-07:00", "2006-01-02T22:04:05Z"},
	{"2006-01-02t15:04:05z", "2006-01-02T15:04:05Z"},
	{"2006-01-02T15:04:05+0100", "2006-01-02T14:04:05Z"},
	{"2006-01-02T15:04:05+01", "2006-01-02T14:04:05Z"},
	{"2006-01-02T15:04:05", "2006-01-02T15:04:05Z"},
	{"2006-01-02T15:04Z", "2006-01-02T15:04:00Z"},
	{"2006-01-02T15:04+02:00", "2006-01-02T13:04:00Z"},
	{"2006-01-02 15:04:05", "2006-01-02T15:04:05Z"},
	{"2006-01-02 15:04:05 +0000 UTC", "2006-01-02T15:04:05Z"}, // Go's time.String
	{"2006-01-02 15:04:05.123456 -0700 MST", "2006-01-02T22:04:05.123456Z"},
	{"2006-01-02 15:04:05 GMT", "2006-01-02T15:04:05Z"},
	{"2006-01-02T15:04:05,5Z", "2006-01-02T15:04:05.5Z"},
	{"2006-01-02", "2006-01-02T00:00:00Z"},
	{"2006-01", "2006-01-01T00:00:00Z"},
	{"2006", "2006-01-01T00:00:00Z"},
	{"20060102", "2006-01-02T00:00:00Z"},
	{"20060102T150405Z", "2006-01-02T15:04:05Z"},
	{"20060102T1504Z", "2006-01-02T15:04:00Z"},
	{"2006-1-2", "2006-01-02T00:00:00Z"},
	{"  2006-01-02T15:04:05Z\n", "2006-01-02T15:04:05Z"},

	// Other numeric forms.
	{"2006/01/02", "2006-01-02T00:00:00Z"},
	{"2006/01/02 15:04:05", "2006-01-02T15:04:05Z"},
	{"2006.01.02", "2006-01-02T00:00:00Z"},
	{"01/02/2006", "2006-01-02T00:00:00Z"},       // month first
	{"13/02/2006", "2006-02-13T00:00:00Z"},       // the day cannot be 13th month
	{"02.01.2006 15:04", "2006-01-02T15:04:00Z"}, // dots: day first
	{"2006年1月2日", "2006-01-02T00:00:00Z"},
	{"2006年1月2日 15:04", "2006-01-02T15:04:00Z"},
	{"1136214245", "2006-01-02T15:04:05Z"},    // Unix seconds
	{"1136214245000", "2006-01-02T15:04:05Z"}, // Unix milliseconds

	// Free forms.
	{"January 2, 2006", "2006-01-02T00:00:00Z"},
	{"January 2nd, 2006 3:04 pm", "2006-01-02T15:04:00Z"},
	{"Jan 2, 2006 at 3:04 p.m. EST", "2006-01-02T20:04:00Z"},
	{"2 January 2006", "2006-01-02T00:00:00Z"},
	{"12:30 AM, January 2, 2006", "2006-01-02T00:30:00Z"},
	{"January 2006", "2006-01-01T00:00:00Z"},

	// Other languages.
	{"lun., 02 janv. 2006 15:04:05 +0100", "2006-01-02T14:04:05Z"},
	{"mar., 5 mars 2024 10:00:00 +0100", "2024-03-05T09:00:00Z"},
	{"Mardi 5 mars 2024", "2024-03-05T00:00:00Z"},
	{"jeudi 17 août 2023 12:00", "2023-08-17T12:00:00Z"},
	{"17 aout 2023", "2023-08-17T00:00:00Z"},
	{"Mo, 02 Mär 2015 11:25:03 +0100", "2015-03-02T10:25:03Z"},
	{"Dienstag, 3. März 2015", "2015-03-03T00:00:00Z"},
	{"Do, 01 Okt 2015 08:00:00 +0200", "2015-10-01T06:00:00Z"},
	{"Mi, 16 Dez 2015 12:00:00 MEZ", "2015-12-16T11:00:00Z"},
	{"mié, 02 ene 2019 10:00:00 +0000", "2019-01-02T10:00:00Z"},
	{"mar, 05 mar 2019 10:00:00 +0000", "2019-03-05T10:00:00Z"},
	{"5 de marzo de 2024", "2024-03-05T00:00:00Z"},
	{"sáb, 21 dic 2019 08:00:00 -0300", "2019-12-21T11:00:00Z"},
	{"gio, 12 set 2019 08:00:00 +0200", "2019-09-12T06:00:00Z"},
	{"12 ottobre 2019", "2019-10-12T00:00:00Z"},
	{"ter, 12 out 2019 08:00:00 -0300", "2019-10-12T11:00:00Z"},
	{"12 de março de 2019", "2019-03-12T00:00:00Z"},
	{"di, 12 mrt 2019 08:00:00 +0100", "2019-03-12T07:00:00Z"},
	{"12 mei 2019", "2019-05-12T00:00:00Z"},
	{"tis, 12 maj 2019 08:00:00 +0200", "2019-05-12T06:00:00Z"},
	{"Пн, 02 янв 2006 15:04:05 +0300", "2006-01-02T12:04:05Z"},
	{"2 января 2006 г.", "2006-01-02T00:00:00Z"},
	{"wt, 12 lis 2019 08:00:00 +0100", "2019-11-12T07:00:00Z"},
	{"12 listopada 2019", "2019-11-12T00:00:00Z"},
	{"Sal, 12 Kas 2019 08:00:00 +0300", "2019-11-12T05:00:00Z"},
	{"12. března 2019", "2019-03-12T00:00:00Z"},

	// feedparser's cases (tests/test_date_parsers.py).
	{"Κυρ, 11 Ιούλ 2004 12:00:00 EST", "2004-07-11T17:00:00Z"},
	{"2004-július-13T9:15-05:00", "2004-07-13T14:15:00Z"},
	{"2003-12-31T10:14:55.1234Z", "2003-12-31T10:14:55.1234Z"},
	{"2003-012-31T10:14:55+00:00", "2003-12-31T10:14:55Z"},
	{"Fri, 2006/09/15 08:19:53 EDT", "2006-09-15T12:19:53Z"},
	{"Thu, 30 Apr 2015 08:57:00 MET", "2015-04-30T07:57:00Z"},
	{"Thu, 30 Apr 2015 08:57:00 MEST", "2015-04-30T06:57:00Z"},
	{"Thu, 01 Jan 0100 00:00:01 +0100", "0099-12-31T23:00:01Z"},
	{"Thu, 01 Jan 04 19:48:21 GMT", "2004-01-01T19:48:21Z"},
	{"Thu,  5 Apr 2012 10:00:00 GMT", "2012-04-05T10:00:00Z"},
	{"Wed, 19 Aug 2009 18:28:00 Etc/GMT", "2009-08-19T18:28:00Z"},
	{"Wed, 19 Feb 2012 22:40:00 GMT-01:01", "2012-02-19T23:41:00Z"},
	{"Wed, 19 Feb 2012 22:40:00 -01:01", "2012-02-19T23:41:00Z"},
	{"Mon, 13 Feb, 2012 06:28:00 UTC", "2012-02-13T06:28:00Z"},
	{"Thu, 01 Jan 2004 00:00 GMT", "2004-01-01T00:00:00Z"},
	{"Mon, 26 January 2004 16:31:00 AT", "2004-01-26T20:31:00Z"},
	{"Mon, 26 January 2004 16:31:00 ET", "2004-01-26T21:31:00Z"},
	{"Mon, 26 January 2004 16:31:00 CT", "2004-01-26T22:31:00Z"},
	{"Mon, 26 January 2004 16:31:00 MT", "2004-01-26T23:31:00Z"},
	{"Mon, 26 January 2004 16:31:00 PT", "2004-01-27T00:31:00Z"},
	{"Thu Aug 30 2012 17:26:16 +0200", "2012-08-30T15:26:16Z"},
	{"Sun Jan  4 16:29:06 2004", "2004-01-04T16:29:06Z"},
	{"Sun Jul 15 01:16:00 +0000 2012", "2012-07-15T01:16:00Z"},
	{"2007-04-23T23:25:47.538+10:00", "2007-04-23T13:25:47.538Z"},
	{"2004-02-28T18:14:55-08:00", "2004-02-29T02:14:55Z"},
	{"2003-02-28T18:14:55-08:00", "2003-03-01T02:14:55Z"},
	{"2004-07-08 23:56:58 -00:20", "2004-07-09T00:16:58Z"},
	{"2004-07-08 23:56:58.0", "2004-07-08T23:56:58Z"},
	{"2004-05-25 오후 11:23:17", "2004-05-25T14:23:17Z"}, // Korean: KST
	{"2004-05-25 오전 11:23:17", "2004-05-25T02:23:17Z"},
	{"2004-05-25 오후 11:23:17 +0000", "2004-05-25T23:23:17Z"}, // a zone given wins
	{"2004년 05월 28일  01:31:15", "2004-05-27T16:31:15Z"},
	{"-0312", "2003-12-01T00:00:00Z"},  // ISO 8601:1988 truncated: -YYMM
	{"031231", "2003-12-31T00:00:00Z"}, // YYMMDD
	{"03-12-31", "2003-12-31T00:00:00Z"},
	{"-03-12", "2003-12-01T00:00:00Z"},
	{"03335", "2003-12-01T00:00:00Z"}, // YYDDD: ordinal
	{"03-335", "2003-12-01T00:00:00Z"},
	{"2003-335", "2003-12-01T00:00:00Z"},
	{"2003335", "2003-12-01T00:00:00Z"},
	{"2004-366", "2004-12-31T00:00:00Z"},
	{"2003-366", ""},
	{"2003-000", ""},
	{"031231T101455Z", "2003-12-31T10:14:55Z"},
	{"03-12-31 10:14", "2003-12-31T10:14:00Z"},
	{"12-31-03", "2003-12-31T00:00:00Z"}, // not ISO: month first
	{"-0313", ""},
	{"2013-01-28T11:30:00-06:00Textra", ""}, // trailing junk
	{"2013-01-28T11:30:00Zextra", ""},
	{"2013-01-28Textra", ""},
	{"Sun, 16 Dec 2012 1:2:3:4 GMT", ""},
	{"Sun, 16 zzz 2012 11:47:32 GMT", ""},
	{"Sun, Dec x 2012 11:47:32 GMT", ""},
	{"Sun, 16 Dec zz 11:47:32 GMT", ""},
	{"Sun, 16 Dec 2012 11:47:32 +zz:00", ""},
	{"Sun, 16 Dec 2012 11:47:32 +00:zz", ""},
	{"Sun, 99 Jun 2009 12:00:00 GMT", ""},
	{"Sun, 31 Dec 9999 23:59:59 -9999", ""},
	{"9999-12-31T23:59:59-99:99", ""},
	{"2003-12-31T25:14:55Z", ""},
	{"2003-12-31T10:61:55Z", ""},
	{"2003-12-31T10:14:61Z", ""},
	{"22013", "2022-01-13T00:00:00Z"}, // YYDDD, as feedparser reads it
	{"013", ""},
	{"2013-01-27-01", ""},
	{"2013-xx-27", ""},
	{"2013-01-28T09:xx:00Z", ""},
	{"2013-01-28T09:00:00+00:xx", ""},
	{"Jan 2, 2006 at 3:04 pm", "2006-01-02T15:04:00Z"},

	// Not dates, or not whole ones.
	{"", ""},
	{"   ", ""},
	{"now", ""},
	{"yesterday", ""},
	{"2 days ago", ""},
	{"N/A", ""},
	{"0000-00-00 00:00:00", ""},
	{"2006-13-01", ""},
	{"2006-02-30", ""},
	{"2006-02-29", ""},
	{"Mon, 32 Jan 2006 15:04:05 GMT", ""},
	{"Mon, 02 Foo 2006 15:04:05 GMT", ""},
	{"Mon, 02 Jan 2006 25:04:05 GMT", ""},
	{"Mon, 02 Jan 2006 15:64:05 GMT", ""},
	{"Mon, 02 Jan 2006 15:04:05 +2500", ""},
	{"Mon, 02 Jan 2006 13:04:05 PM", ""},
	{"Mon, 02 Jan", ""},
	{"Jan 2", ""},
	{"15:04:05", ""},
	{"12345", "2012-12-10T00:00:00Z"}, // YYDDD
	{"123456789012345", ""},
	{"1 2 3 4", ""},
	{"Mon, 02 Jan 2006 15:04:05 (unclosed", ""},
	{"1518478934a", ""},
	{strings.Repeat("1", 200), ""},
	{"99999-01-01", ""},
}

func TestParse(t *testing.T) {
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if tt.want == "" {
			if err == nil {
				t.Errorf("Parse(%q) = %v, want an error", tt.in, got.Format(time.RFC3339Nano))
			} else if !errors.Is(err, ErrUnparseable) {
				t.Errorf("Parse(%q) error %v does not wrap ErrUnparseable", tt.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v, want %s", tt.in, err, tt.want)
			continue
		}
		if s := got.Format(time.RFC3339Nano); s != tt.want {
			t.Errorf("Parse(%q) = %s, want %s", tt.in, s, tt.want)
		}
		if got.Location() != time.UTC {
			t.Errorf("Parse(%q) is in %v, want UTC", tt.in, got.Location())
		}
	}
}

// Every layout of the standard library that carries a full date reads
// back to the instant it was written from.
func TestParseStandardLayouts(t *testing.T) {
	at := time.Date(2026, 11, 21, 8, 30, 15, 0, time.FixedZone("CET", 3600))
	for _, layout := range []string{time.ANSIC, time.UnixDate, time.RubyDate, time.RFC822, time.RFC822Z, time.RFC850,
		time.RFC1123, time.RFC1123Z, time.RFC3339, time.RFC3339Nano, time.DateTime, "2006-01-02T15:04:05.000-0700"} {
		s := at.Format(layout)
		got, err := Parse(s)
		if err != nil {
			t.Errorf("Parse(%q) (%s): %v", s, layout, err)
			continue
		}
		want := at
		switch layout {
		case time.DateTime, time.ANSIC: // no zone: read as UTC
			want = time.Date(2026, 11, 21, 8, 30, 15, 0, time.UTC)
		case time.RFC822, time.RFC822Z: // no seconds
			want = at.Truncate(time.Minute)
		}
		if !got.Equal(want) {
			t.Errorf("Parse(%q) (%s) = %v, want %v", s, layout, got, want.UTC())
		}
	}
}

func TestMonthNamesAgree(t *testing.T) {
	seen := map[string]int{}
	for _, lang := range months {
		for i, names := range lang {
			for _, n := range splitSpace(names) {
				if m, ok := seen[n]; ok && m != i+1 {
					t.Errorf("%q is month %d and month %d", n, m, i+1)
				}
				seen[n] = i + 1
				if _, ok := zoneNames[n]; ok {
					t.Errorf("%q is a month and a zone", n)
				}
			}
		}
	}
}

// TestRFC1123 holds parseRFC1123, Parse's fast reading of RSS dates, to
// the general reading: whatever it reads, the general reading reads the
// same.
func TestRFC1123(t *testing.T) {
	for _, tt := range tests {
		checkRFC1123(t, tt.in)
	}
	for _, s := range []string{"Mon, 02 Jan 2006 15:04:05 -0700", "Sun, 6 Nov 1994 08:49:37 GMT", "Tue, 29 Feb 2000 23:59:59 +1400", "Wed, 31 Dec 1969 23:59:59 UT"} {
		if _, ok := parseRFC1123(s); !ok {
			t.Errorf("parseRFC1123(%q) does not read it", s)
		}
		checkRFC1123(t, s)
	}
}

func checkRFC1123(t *testing.T, s string) {
	t.Helper()
	fast, ok := parseRFC1123(s)
	if !ok {
		return
	}
	var p parser
	if slow, ok := p.parse(s); !ok || !slow.Equal(fast) || fast.Location() != time.UTC {
		t.Errorf("parseRFC1123(%q) = %v; the general reading: %v, %v", s, fast, slow, ok)
	}
}

func FuzzParse(f *testing.F) {
	for _, tt := range tests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkRFC1123(t, s)
		got, err := Parse(s)
		if err != nil {
			if !errors.Is(err, ErrUnparseable) {
				t.Errorf("Parse(%q) error %v does not wrap ErrUnparseable", s, err)
			}
			return
		}
		if got.Location() != time.UTC {
			t.Errorf("Parse(%q) is not UTC", s)
		}
		// Whatever Parse accepts, it accepts again in RFC 3339.
		if y := got.Year(); y >= 0 && y <= 9999 {
			back, err := Parse(got.Format(time.RFC3339Nano))
			if err != nil || !back.Equal(got) {
				t.Errorf("Parse(%q) = %v, which reads back as %v, %v", s, got, back, err)
			}
		}
	})
}

func BenchmarkParse(b *testing.B) {
	for _, s := range []string{"Mon, 02 Jan 2006 15:04:05 -0700", "2006-01-02T15:04:05Z", "2006-01-02T15:04:05+0100", "lun., 02 janv. 2006 15:04:05 +0100"} {
		b.Run(s, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
