package conversation

import (
	"strings"
	"unicode"
)

// firstClauseWords is how many words the first piece of an answer needs
// before a comma may end it: the first words are spoken as soon as they
// make a phrase, the rest sentence by sentence.
const firstClauseWords = 4

// sentences cuts a streamed answer into the pieces the voice speaks: whole
// sentences, and for the first piece the first clause, so that the agent
// starts talking before the whole answer has arrived. Text between <think>
// and </think> (a reasoning model's) is never spoken.
type sentences struct {
	buf      strings.Builder
	emitted  int // pieces given out since reset
	thinking bool
}

// reset starts a new answer.
func (s *sentences) reset() {
	s.buf.Reset()
	s.emitted, s.thinking = 0, false
}

// add takes the next chunk of text and returns the pieces it completed.
func (s *sentences) add(chunk string) []string {
	s.buf.WriteString(chunk)
	s.dropThinking()
	var out []string
	for {
		text := s.buf.String()
		cut := s.boundary(text)
		if cut < 0 {
			return out
		}
		if piece := strings.TrimSpace(text[:cut]); piece != "" {
			out = append(out, piece)
			s.emitted++
		}
		s.buf.Reset()
		s.buf.WriteString(text[cut:])
	}
}

// flush returns what is left at the end of the answer.
func (s *sentences) flush() string {
	s.dropThinking()
	rest := ""
	if !s.thinking {
		rest = strings.TrimSpace(s.buf.String())
	}
	s.reset()
	return rest
}

// boundary is where the first complete piece of text ends (-1: none yet):
// after a sentence's end mark followed by a space, or a line break; for
// the first piece also after a comma, semicolon or colon once it has
// firstClauseWords words.
func (s *sentences) boundary(text string) int {
	for i, r := range text {
		if r == '\n' {
			return i + 1
		}
		if i+1 >= len(text) || !unicode.IsSpace(rune(text[i+1])) {
			continue
		}
		switch r {
		case '.', '!', '?':
			return i + 1
		case ',', ';', ':':
			if s.emitted == 0 && len(strings.Fields(text[:i])) >= firstClauseWords {
				return i + 1
			}
		}
	}
	return -1
}

// dropThinking removes <think>...</think> from the buffer: a thought
// still open is dropped as it streams.
func (s *sentences) dropThinking() {
	const open, closing = "<think>", "</think>"
	text := s.buf.String()
	if !s.thinking && !strings.Contains(text, open) {
		return
	}
	var kept strings.Builder
	for text != "" {
		if s.thinking {
			end := strings.Index(text, closing)
			if end < 0 {
				break // all of it is thought, so far
			}
			text, s.thinking = text[end+len(closing):], false
			continue
		}
		start := strings.Index(text, open)
		if start < 0 {
			kept.WriteString(text)
			break
		}
		kept.WriteString(text[:start])
		text, s.thinking = text[start+len(open):], true
	}
	s.buf.Reset()
	s.buf.WriteString(kept.String())
}
