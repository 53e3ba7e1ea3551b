package extract

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The keyword extractor's name and version, recorded with what it derives
// (docs/design.md#scraping, derivations). Change the version whenever its output for some text would
// change: the stop words, the tokenizer, the scoring.
const (
	KeywordExtractor = "feedpipe-tf"
	KeywordVersion   = "1"
	MaxKeywords      = 10
)

// Keywords derives an entry's keywords from its title and text by term
// frequency: the words that are not stop words (English), at least three
// letters long and not numbers, scored by how often they occur over how
// many such words there are, rounded to 4 decimals; best first, ties in
// alphabetical order. The same text always gives the same keywords. It
// returns nil when the text has no such words.
//
// TF was chosen over TF-IDF and RAKE because it needs no corpus (a
// pipeline stage sees one entry at a time) and no tuning, and it is
// simple enough to reason about from the output alone.
func Keywords(title, text string) *ndjson.Derivation {
	counts := map[string]int{}
	total := 0
	for _, s := range []string{title, text} {
		for _, w := range strings.FieldsFunc(strings.ToLower(s), notWordRune) {
			w = strings.TrimSuffix(strings.TrimSuffix(w, "'s"), "’s") // possessives
			w = strings.Trim(w, "'’-")
			if utf8.RuneCountInString(w) < 3 || stopWords[w] || isNumber(w) {
				continue
			}
			counts[w]++
			total++
		}
	}
	if total == 0 {
		return nil
	}
	kws := make([]ndjson.Keyword, 0, len(counts))
	for w, n := range counts {
		kws = append(kws, ndjson.Keyword{Term: w, Score: math.Round(float64(n)/float64(total)*1e4) / 1e4})
	}
	slices.SortFunc(kws, func(a, b ndjson.Keyword) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), strings.Compare(a.Term, b.Term))
	})
	if len(kws) > MaxKeywords {
		kws = kws[:MaxKeywords]
	}
	return &ndjson.Derivation{Kind: ndjson.DerivationKeywords, Extractor: KeywordExtractor, Version: KeywordVersion, Keywords: kws}
}

// notWordRune splits text into words: letters, digits and the apostrophes
// and hyphens inside words are kept.
func notWordRune(r rune) bool {
	return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '’' && r != '-'
}

func isNumber(w string) bool {
	for _, r := range w {
		if !unicode.IsDigit(r) && r != '-' {
			return false
		}
	}
	return true
}

// stopWords are English function words and the words of web pages that
// say nothing about an article.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		about above after again against all also although always among and another any are aren't around
		because been before being below between both but can can't cannot could couldn't did didn't does
		doesn't doing don't down during each either else even ever every few for from further get gets got
		had hadn't has hasn't have haven't having her here here's hers herself him himself his how how's
		however i'd i'll i'm i've into isn't it's its itself just let's like made make many may might more
		most much must mustn't myself near need never new next nor not now off often once one only onto
		other others ought our ours ourselves out over own per perhaps quite rather really said same say
		says see seen shall shan't she she'd she'll she's should shouldn't since some still such than that
		that's the their theirs them themselves then there there's these they they'd they'll they're
		they've this those though through thus too toward towards under until upon use used using very via
		was wasn't way we'd we'll we're we've well were weren't what what's when when's where where's
		whether which while who who's whom whose why why's will with within without won't would wouldn't
		yet you you'd you'll you're you've your yours yourself yourselves
		read more click share comment comments home page menu login sign subscribe
		newsletter cookie cookies privacy copyright reserved rights`) {
		m[w] = true
	}
	return m
}()
