package speech

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchboard-dev/switchboard/internal/telephony/audio"
)

// openAIServer posts each utterance, as an 8 kHz WAV, to an
// OpenAI-compatible POST {base}/audio/transcriptions (whisper.cpp's server,
// faster-whisper servers, vLLM) through the official client.
type openAIServer struct {
	service openai.AudioTranscriptionService
	model   openai.AudioModel
	// plain is set once the server refused verbose_json (HTTP 400): it is
	// asked for plain json, without word offsets, from then on.
	plain atomic.Bool
}

func newOpenAIServer(baseURL string, opts ServerOptions, client *http.Client) *openAIServer {
	model := opts.Model
	if model == "" {
		model = "whisper-1"
	}
	// The service alone, not openai.NewClient: the client would add the
	// operator's OPENAI_* environment (key, organization, base URL) to
	// requests to the organization's server.
	return &openAIServer{
		service: openai.NewAudioTranscriptionService(
			option.WithBaseURL(strings.TrimSuffix(baseURL, "/")+"/"),
			option.WithAPIKey(opts.APIKey),
			option.WithHTTPClient(client),
			option.WithMaxRetries(0), // a failure falls back at once; the caller is on a live call
		),
		model: model,
	}
}

func (s *openAIServer) Name() string { return ServerName }

func (s *openAIServer) Recognize(ctx context.Context, pcm []int16, hints []string) (Result, error) {
	params := openai.AudioTranscriptionNewParams{
		File:  openai.File(bytes.NewReader(audio.Mono(pcm)), "utterance.wav", "audio/wav"),
		Model: s.model,
		// Word offsets for the transcript (OpenAI's whisper-1,
		// faster-whisper servers, whisper.cpp's server); a server that
		// refuses verbose_json is asked plain json from the next
		// utterance on.
		ResponseFormat:         openai.AudioResponseFormatVerboseJSON,
		TimestampGranularities: []string{"word"},
	}
	verbose := !s.plain.Load()
	if !verbose {
		params.ResponseFormat, params.TimestampGranularities = openai.AudioResponseFormatJSON, nil
	}
	if len(hints) > 0 {
		// Whisper-style models take no grammar; a prompt of the expected
		// phrases biases them towards those words.
		params.Prompt = openai.String(strings.Join(hints, ", "))
	}
	res, err := s.service.New(ctx, params)
	if err != nil {
		var apiErr *openai.Error
		if errors.As(err, &apiErr) {
			if apiErr.StatusCode == http.StatusBadRequest && verbose {
				s.plain.Store(true)
			}
			return Result{}, &serverError{reason: fmt.Sprintf("HTTP %d", apiErr.StatusCode), err: errors.New(http.StatusText(apiErr.StatusCode))}
		}
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		if errors.As(err, &syntax) || errors.As(err, &typ) {
			return Result{}, &serverError{reason: "malformed answer", err: err}
		}
		return Result{}, err
	}
	if !res.JSON.Text.Valid() {
		return Result{}, &serverError{reason: "malformed answer", err: errors.New("the answer has no text")}
	}
	text := strings.TrimSpace(res.Text)
	if text == "" {
		return Result{}, nil
	}
	return Result{Text: text, Confidence: 1, Words: openAIWords(res.Words)}, nil
}

// openAIWords are a verbose answer's words (nil in a plain one), without
// the spaces Whisper puts before them.
func openAIWords(in []openai.TranscriptionWord) []Word {
	var out []Word
	for _, w := range in {
		if text := strings.TrimSpace(w.Word); text != "" {
			out = append(out, Word{Text: text, Start: seconds(w.Start), End: seconds(w.End)})
		}
	}
	return out
}
