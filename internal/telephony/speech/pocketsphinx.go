//go:build pocketsphinx && cgo

package speech

/*
#cgo pkg-config: pocketsphinx
#include <stdlib.h>
#include <pocketsphinx.h>

// newDecoder builds a decoder from argv-style options (cmd_ln_init is
// variadic, which cgo cannot call).
static ps_decoder_t *newDecoder(int argc, char **argv) {
	cmd_ln_t *config = cmd_ln_parse_r(NULL, ps_args(), argc, argv, FALSE);
	if (config == NULL) return NULL;
	ps_decoder_t *ps = ps_init(config);
	cmd_ln_free_r(config);
	return ps;
}

static double posterior(ps_decoder_t *ps, int32 prob) {
	return logmath_exp(ps_get_logmath(ps), prob);
}
*/
import "C"

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unsafe"
)

const (
	searchOpen  = "_default" // the language model search ps_init sets up
	searchHints = "hints"
	searchCheck = "check" // checkGrammar's
)

// pocketSphinx is a bounded pool of decoders: a decoder is not safe for
// concurrent use, so each Recognize takes one for the utterance.
type pocketSphinx struct {
	pool       chan *decoder
	maxSamples int // 8 kHz samples per segment
}

type decoder struct {
	ps *C.ps_decoder_t
	// grammar is the hint grammar the "hints" search was built from, so
	// a gather step's repeated prompts reuse it.
	grammar string
}

func newPocketSphinx(opts EmbeddedOptions) (Recognizer, error) {
	for _, f := range []string{"en-us/mdef", "en-us.lm.bin", "cmudict-en-us.dict"} {
		if _, err := os.Stat(filepath.Join(opts.ModelDir, f)); err != nil {
			return nil, fmt.Errorf("speech: the embedded recognizer's model is missing "+
				"(apt-get install pocketsphinx-en-us): %w", err)
		}
	}
	p := &pocketSphinx{
		pool:       make(chan *decoder, opts.Decoders),
		maxSamples: opts.MaxUtteranceSeconds * SampleRate,
	}
	for range opts.Decoders {
		d, err := openDecoder(opts.ModelDir)
		if err != nil {
			p.Close()
			return nil, err
		}
		p.pool <- d
	}
	return p, nil
}

func openDecoder(dir string) (*decoder, error) {
	args := []string{"pocketsphinx",
		"-hmm", filepath.Join(dir, "en-us"),
		"-lm", filepath.Join(dir, "en-us.lm.bin"),
		"-dict", filepath.Join(dir, "cmudict-en-us.dict"),
		"-logfn", os.DevNull, // the library's chatter is not our log
		"-bestpath", "yes",
		// CMU's settings for speed: fewer active HMMs and words per frame
		// and a phone-loop lookahead. On the held-out set they cut open
		// recognition's CPU by 40 % without losing accuracy.
		"-maxhmmpf", "3000", "-maxwpf", "5", "-pl_window", "10",
	}
	argv := make([]*C.char, len(args))
	for i, a := range args {
		argv[i] = C.CString(a)
		defer C.free(unsafe.Pointer(argv[i]))
	}
	ps := C.newDecoder(C.int(len(args)), &argv[0])
	if ps == nil {
		return nil, fmt.Errorf("speech: PocketSphinx could not load the model in %s", dir)
	}
	d := &decoder{ps: ps}
	if err := d.addPhoneWords(); err != nil {
		C.ps_free(ps)
		return nil, err
	}
	return d, nil
}

// addPhoneWords adds checkGrammar's phone words to the dictionary (the
// language model of open recognition does not have them).
func (d *decoder) addPhoneWords() error {
	for i, p := range phones {
		cw, cp := C.CString(phoneWord(p)), C.CString(p)
		update := C.int(0)
		if i == len(phones)-1 {
			update = 1
		}
		rc := C.ps_add_word(d.ps, cw, cp, update)
		C.free(unsafe.Pointer(cw))
		C.free(unsafe.Pointer(cp))
		if rc < 0 {
			return fmt.Errorf("speech: PocketSphinx refused the phone word %s", p)
		}
	}
	return nil
}

func (p *pocketSphinx) Name() string { return EmbeddedName }

// Close frees the decoders; call it when no Recognize is running (a decoder
// in use is not waited for).
func (p *pocketSphinx) Close() {
	for {
		select {
		case d := <-p.pool:
			C.ps_free(d.ps)
		default:
			return
		}
	}
}

func (p *pocketSphinx) Recognize(ctx context.Context, pcm []int16, hints []string) (Result, error) {
	var d *decoder
	select {
	case d = <-p.pool:
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	defer func() { p.pool <- d }()

	constrained, err := d.useSearch(hints)
	if err != nil {
		return Result{}, err
	}
	// A long monologue is cut into segments so the decoder's memory (it
	// keeps the whole utterance's features and lattice) stays bounded.
	var texts []string
	var words []Word
	conf := 1.0
	for start := 0; start < len(pcm); start += p.maxSamples {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		seg := pcm[start:min(start+p.maxSamples, len(pcm))]
		decode := d.decode
		if constrained {
			decode = d.decodeChecked
		}
		text, c, segWords, err := decode(seg)
		if err != nil {
			return Result{}, err
		}
		if text != "" {
			texts = append(texts, text)
			conf = min(conf, c)
		}
		offset := time.Duration(start) * time.Second / SampleRate
		for _, w := range segWords {
			words = append(words, Word{Text: w.Text, Start: offset + w.Start, End: offset + w.End})
		}
	}
	if len(texts) == 0 {
		return Result{}, nil
	}
	text := strings.Join(texts, " ")
	if constrained {
		text, words = trimFillers(text, hints), trimFillerWords(words, hints)
	}
	return Result{Text: text, Confidence: conf, Words: words}, nil
}

// useSearch selects constrained recognition over the hints' grammar
// (constrained true), or the open language model when there are no usable
// hints.
func (d *decoder) useSearch(hints []string) (constrained bool, err error) {
	grammar := hintGrammar(hints, d.known)
	name := searchOpen
	if grammar != "" {
		name = searchHints
		if grammar != d.grammar {
			d.grammar = ""
			if err := d.setGrammar(searchHints, grammar); err != nil {
				return false, err
			}
			if err := d.setGrammar(searchCheck, checkGrammar(grammar)); err != nil {
				return false, err
			}
			d.grammar = grammar
		}
	}
	return name == searchHints, d.setSearch(name)
}

func (d *decoder) setGrammar(search, grammar string) error {
	cname, cg := C.CString(search), C.CString(grammar)
	defer C.free(unsafe.Pointer(cname))
	defer C.free(unsafe.Pointer(cg))
	if C.ps_set_jsgf_string(d.ps, cname, cg) != 0 {
		return fmt.Errorf("speech: PocketSphinx refused the grammar %q", grammar)
	}
	return nil
}

func (d *decoder) setSearch(name string) error {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	if C.ps_set_search(d.ps, cname) != 0 {
		return fmt.Errorf("speech: PocketSphinx has no search %q", name)
	}
	return nil
}

// decodeChecked decodes a segment with the hint grammar, then again with
// the check grammar (checkGrammar), and returns the first's text and words
// with how sure the two together are (verified).
func (d *decoder) decodeChecked(pcm8k []int16) (string, float64, []Word, error) {
	hint, conf, words, err := d.decode(pcm8k)
	if err != nil || hint == "" {
		return hint, conf, words, err
	}
	if err := d.setSearch(searchCheck); err != nil {
		return "", 0, nil, err
	}
	check, _, _, err := d.decode(pcm8k)
	if err2 := d.setSearch(searchHints); err == nil {
		err = err2
	}
	if err != nil {
		return "", 0, nil, err
	}
	return hint, min(conf, verified(hint, check)), words, nil
}

func (d *decoder) known(word string) bool {
	cw := C.CString(word)
	defer C.free(unsafe.Pointer(cw))
	pron := C.ps_lookup_word(d.ps, cw)
	if pron == nil {
		return false
	}
	C.free(unsafe.Pointer(pron))
	return true
}

// decode runs one segment through the decoder, upsampled to the model's
// 16 kHz, as a whole utterance, and returns its text, confidence and words: the cepstral mean is then the segment's
// own (batch), so what one call said before does not change what the next
// is heard to say, as a live decoder's running mean would. A cancelled
// call stops between segments.
func (d *decoder) decode(pcm8k []int16) (string, float64, []Word, error) {
	if C.ps_start_utt(d.ps) != 0 {
		return "", 0, nil, fmt.Errorf("speech: PocketSphinx could not start an utterance")
	}
	pcm := Upsample16k(pcm8k)
	if C.ps_process_raw(d.ps, (*C.int16)(unsafe.Pointer(&pcm[0])), C.size_t(len(pcm)), 0, 1) < 0 {
		C.ps_end_utt(d.ps)
		return "", 0, nil, fmt.Errorf("speech: PocketSphinx could not process the audio")
	}
	if C.ps_end_utt(d.ps) != 0 {
		return "", 0, nil, fmt.Errorf("speech: PocketSphinx could not end the utterance")
	}
	var score C.int32
	hyp := C.ps_get_hyp(d.ps, &score)
	if hyp == nil {
		return "", 0, nil, nil
	}
	text := cleanHypothesis(C.GoString(hyp))
	if text == "" {
		return "", 0, nil, nil
	}
	conf := float64(C.posterior(d.ps, C.ps_get_prob(d.ps)))
	if conf <= 0 || conf > 1 {
		conf = 1 // no posterior from this search
	}
	return text, conf, d.words(), nil
}

// frameDuration is one of the decoder's frames (its default -frate, 100
// frames a second).
const frameDuration = 10 * time.Millisecond

// words are the best hypothesis's words with their frames, as offsets
// from the start of the segment; fillers and noises are left out, as
// cleanHypothesis leaves them out of the text.
func (d *decoder) words() []Word {
	var words []Word
	// ps_seg_next frees the iterator at the end.
	for seg := C.ps_seg_iter(d.ps); seg != nil; seg = C.ps_seg_next(seg) {
		w, ok := spokenWord(C.GoString(C.ps_seg_word(seg)))
		if !ok {
			continue
		}
		var sf, ef C.int
		C.ps_seg_frames(seg, &sf, &ef)
		// ef is the word's last frame, included.
		words = append(words, Word{Text: w, Start: time.Duration(sf) * frameDuration, End: time.Duration(ef+1) * frameDuration})
	}
	return words
}
