package dates

// monthNames maps the names of the months, full and abbreviated, in the
// languages feeds are most often written in, lower-cased, to 1-12. Names
// are listed with and without their accents, since both are written.
var monthNames = map[string]int{}

// months lists, per language, the names of each month (any number of
// spellings separated by spaces).
var months = [...][12]string{
	// English
	{"january jan", "february feb", "march mar", "april apr", "may", "june jun", "july jul", "august aug", "september sep sept", "october oct", "november nov", "december dec"},
	// French
	{"janvier janv", "février fevrier févr fevr fév fev", "mars", "avril avr", "mai", "juin", "juillet juil", "août aout aoû", "septembre", "octobre", "novembre", "décembre decembre déc"},
	// German
	{"januar jänner jänn jän", "februar", "märz maerz mär mrz", "april", "mai", "juni", "juli", "august", "september", "oktober okt", "november", "dezember dez"},
	// Spanish
	{"enero ene", "febrero", "marzo", "abril abr", "mayo", "junio", "julio", "agosto ago", "septiembre setiembre set", "octubre", "noviembre", "diciembre dic"},
	// Italian
	{"gennaio gen", "febbraio", "marzo", "aprile", "maggio mag", "giugno giu", "luglio lug", "agosto", "settembre", "ottobre ott", "novembre", "dicembre"},
	// Portuguese
	{"janeiro", "fevereiro", "março marco", "abril", "maio", "junho", "julho", "agosto", "setembro", "outubro out", "novembro", "dezembro dez"},
	// Dutch
	{"januari", "februari", "maart mrt", "april", "mei", "juni", "juli", "augustus", "september", "oktober", "november", "december"},
	// Swedish, Danish, Norwegian
	{"januari januar", "februari februar", "mars marts", "april", "maj mai", "juni", "juli", "augusti august", "september", "oktober okt", "november", "december desember des"},
	// Polish (nominative and genitive)
	{"styczeń styczen stycznia sty", "luty lutego lut", "marzec marca", "kwiecień kwiecien kwietnia kwi", "maj maja", "czerwiec czerwca cze", "lipiec lipca lip", "sierpień sierpien sierpnia sie", "wrzesień wrzesien września wrzesnia wrz", "październik pazdziernik października pazdziernika paź paz", "listopad listopada lis", "grudzień grudzien grudnia gru"},
	// Czech (nominative and genitive)
	{"leden ledna", "únor unor února unora", "březen brezen března brezna", "duben dubna", "květen kveten května kvetna", "červen cerven června cervna", "červenec cervenec července cervence", "srpen srpna", "září zari", "říjen rijen října rijna", "listopad listopadu", "prosinec prosince"},
	// Russian (nominative, genitive, abbreviated)
	{"январь января янв", "февраль февраля фев февр", "март марта мар", "апрель апреля апр", "май мая", "июнь июня июн", "июль июля июл", "август августа авг", "сентябрь сентября сен сент", "октябрь октября окт", "ноябрь ноября ноя нояб", "декабрь декабря дек"},
	// Ukrainian
	{"січень січня січ", "лютий лютого лют", "березень березня бер", "квітень квітня квіт", "травень травня трав", "червень червня черв", "липень липня лип", "серпень серпня серп", "вересень вересня вер", "жовтень жовтня жовт", "листопад листопада лист", "грудень грудня груд"},
	// Turkish
	{"ocak oca", "şubat subat şub sub", "mart", "nisan nis", "mayıs mayis", "haziran haz", "temmuz tem", "ağustos agustos ağu agu", "eylül eylul eyl", "ekim eki", "kasım kasim kas", "aralık aralik ara"},
	// Finnish
	{"tammikuu tammikuuta tammi", "helmikuu helmikuuta helmi", "maaliskuu maaliskuuta maalis", "huhtikuu huhtikuuta huhti", "toukokuu toukokuuta touko", "kesäkuu kesäkuuta kesä", "heinäkuu heinäkuuta heinä", "elokuu elokuuta elo", "syyskuu syyskuuta syys", "lokakuu lokakuuta loka", "marraskuu marraskuuta marras", "joulukuu joulukuuta joulu"},
	// Hungarian
	{"január januar", "február februar", "március marcius márc", "április aprilis ápr", "május majus máj", "június junius jún", "július julius júl", "augusztus aug", "szeptember szept", "október oktober okt", "november", "december"},
	// Indonesian, Malay
	{"januari", "februari", "maret", "april", "mei", "juni", "juli", "agustus agu", "september", "oktober", "november", "desember des"},
	// Greek (genitive and nominative)
	{"ιανουαρίου ιανουάριος ιαν", "φεβρουαρίου φεβρουάριος φεβ", "μαρτίου μάρτιος μαρ μάρ", "απριλίου απρίλιος απρ", "μαΐου μαΐος μαϊ μάι", "ιουνίου ιούνιος ιουν ιούν", "ιουλίου ιούλιος ιουλ ιούλ", "αυγούστου αύγουστος αυγ αύγ", "σεπτεμβρίου σεπτέμβριος σεπ", "οκτωβρίου οκτώβριος οκτ", "νοεμβρίου νοέμβριος νοε", "δεκεμβρίου δεκέμβριος δεκ"},
}

// zoneNames maps zone abbreviations, lower-cased, to seconds east of UTC.
// Where an abbreviation is ambiguous the reading most common in feeds
// wins (IST: India, BST: British Summer Time).
var zoneNames = map[string]int{
	"ut": 0, "utc": 0, "gmt": 0, "z": 0, "wet": 0,
	"est": -5 * 3600, "edt": -4 * 3600, "cst": -6 * 3600, "cdt": -5 * 3600,
	"mst": -7 * 3600, "mdt": -6 * 3600, "pst": -8 * 3600, "pdt": -7 * 3600,
	"akst": -9 * 3600, "akdt": -8 * 3600, "hst": -10 * 3600,
	"ast": -4 * 3600, "adt": -3 * 3600, "nst": -3*3600 - 1800, "ndt": -2*3600 - 1800,
	"bst": 3600, "ist": 5*3600 + 1800, "west": 3600, "cet": 3600, "cest": 2 * 3600,
	"met": 3600, "mest": 2 * 3600, "mez": 3600, "mesz": 2 * 3600,
	"eet": 2 * 3600, "eest": 3 * 3600, "msk": 3 * 3600, "msd": 4 * 3600,
	"wat": 3600, "cat": 2 * 3600, "eat": 3 * 3600, "sast": 2 * 3600,
	"pkt": 5 * 3600, "npt": 5*3600 + 2700, "ict": 7 * 3600, "wib": 7 * 3600,
	"hkt": 8 * 3600, "sgt": 8 * 3600, "pht": 8 * 3600, "awst": 8 * 3600,
	"jst": 9 * 3600, "kst": 9 * 3600, "acst": 9*3600 + 1800, "acdt": 10*3600 + 1800,
	"aest": 10 * 3600, "aedt": 11 * 3600, "nzst": 12 * 3600, "nzdt": 13 * 3600,
	"brt": -3 * 3600, "art": -3 * 3600, "clt": -4 * 3600,
}

// lateZones are abbreviations that are also words ("at"), read as zones
// only after the time: "16:31:00 ET" (Disney's feeds), not "2006 at 3:04".
var lateZones = map[string]int{
	"at": -4 * 3600, "et": -5 * 3600, "ct": -6 * 3600, "mt": -7 * 3600, "pt": -8 * 3600,
}

func init() {
	for _, lang := range months {
		for i, names := range lang {
			for _, n := range splitSpace(names) {
				monthNames[n] = i + 1
			}
		}
	}
}

func splitSpace(s string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	return out
}
