#!/usr/bin/env bash
# Generates a held-out set for the speech recognizers: every line of an utterances file spoken by
# each of a list of Debian TTS voices (by default flite's slt voice and espeak-ng's en-us voice,
# the project's first set), band-limited to the telephone
# band (300-3400 Hz), sent through G.711 mu-law and back, mixed with pink noise at one of two
# levels, at 8 kHz 16-bit mono, as the call's media carries it. Output: the WAV files, a
# manifest.tsv (file, voice, category, value, hints, noise, text) and VERSIONS (the engines'
# versions). sox runs with -R (fixed random seed), so the same engines give the same files.
#
# Needs: apt-get install -y flite espeak-ng sox
# Usage: hack/speech/generate.sh [output folder [utterances file [voice...]]]
#   default: internal/telephony/speech/testdata/heldout, hack/speech/utterances.tsv, flite:slt espeak:en-us
#   a voice is flite:NAME (flite -lv lists them) or espeak:NAME[+VARIANT] (espeak-ng --voices=en);
#   or festival:NAME (festival's voice_NAME, e.g. festival:cmu_us_slt_arctic_hts from
#   festvox-us-slt-hts: apt-get install festival festvox-us-slt-hts);
#   its file suffix is its name with ":" and "+" as "-" ("flite:slt" keeps the first set's "flite").
# The unseen set (hack/speech/unseen.tsv, voices and wordings not used while tuning):
#   NOISE_LEVELS="0 0 0.03" hack/speech/generate.sh internal/telephony/speech/testdata/unseen hack/speech/unseen.tsv \
#     flite:awb flite:rms flite:kal16 espeak:en-029+m3 espeak:en-gb-x-rp+f2 espeak:en-us-nyc+f4
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../internal/telephony/speech/testdata/heldout}
utterances=${2:-$here/utterances.tsv}
shift $(($# < 2 ? $# : 2))
voices=("$@")
((${#voices[@]})) || voices=(flite:slt espeak:en-us)
read -r -a levels <<<"${NOISE_LEVELS:-0.02 0.04}"
for voice in "${voices[@]}"; do
	[[ $voice == festival:* ]] || continue
	command -v text2wave >/dev/null || { echo "generate.sh: text2wave is missing: apt-get install -y festival" >&2; exit 1; }
done
for tool in flite espeak-ng sox; do
	command -v "$tool" >/dev/null || { echo "generate.sh: $tool is missing: apt-get install -y flite espeak-ng sox" >&2; exit 1; }
done
mkdir -p "$out"
rm -f "$out"/*.wav
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# speak VOICE TEXT FILE: the engine's own output, at whatever rate it speaks.
speak() {
	case $1 in
	flite:*) flite -voice "${1#flite:}" -t "$2" -o "$3" ;;
	espeak:*) espeak-ng -v "${1#espeak:}" -s 160 -w "$3" "$2" ;;
	festival:*) printf '%s\n' "$2" | text2wave -eval "(voice_${1#festival:})" -o "$3" ;;
	*) echo "generate.sh: voice $1: want flite:NAME, espeak:NAME or festival:NAME" >&2; exit 1 ;;
	esac
}

# label VOICE: the voice as the manifest and file names carry it.
label() {
	case $1 in
	flite:slt) echo flite ;;
	espeak:en-us) echo espeak ;;
	*) echo "${1//[:+]/-}" ;;
	esac
}

# telephone IN OUT NOISE: 8 kHz telephone band, mu-law round trip, pink noise at amplitude NOISE,
# a quarter second of silence on each side (an utterance as voice activity detection cuts it).
telephone() {
	sox -R -q "$1" -r 8000 -c 1 -b 16 "$work/band.wav" sinc 300-3400 norm -6 pad 0.25 0.25
	sox -R -q "$work/band.wav" -e u-law "$work/ulaw.wav"
	sox -R -q "$work/ulaw.wav" -e signed-integer -b 16 "$work/clean.wav"
	dur=$(soxi -D "$work/clean.wav")
	sox -R -q -n -r 8000 -c 1 -b 16 "$work/noise.wav" synth "$dur" pinknoise vol "$3"
	sox -R -q -m "$work/clean.wav" "$work/noise.wav" -b 16 "$2"
}

manifest=$out/manifest.tsv
printf 'file\tvoice\tcategory\tvalue\thints\tnoise\ttext\n' >"$manifest"
n=0
while IFS=$'\t' read -r id category value hints text; do
	[[ -z $id || $id == \#* ]] && continue
	# "-" marks an empty field: read would merge two tabs in a row.
	[[ $value == - ]] && value=
	[[ $hints == - ]] && hints=
	for voice in "${voices[@]}"; do
		# Cycle through the noise levels (default two, about 30 and 24 dB below the
		# speech's peak; NOISE_LEVELS="0 0 0.03" leaves two utterances in three clean).
		noise=${levels[n % ${#levels[@]}]}
		n=$((n + 1))
		file=$id-$(label "$voice").wav
		speak "$voice" "$text" "$work/tts.wav" </dev/null
		telephone "$work/tts.wav" "$out/$file" "$noise" </dev/null
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$file" "$(label "$voice")" "$category" "$value" "$hints" "$noise" "$text" >>"$manifest"
	done
done <"$utterances"

{
	echo "flite: $(dpkg-query -W -f '${Version}' flite 2>/dev/null || flite --version | head -1)"
	if command -v text2wave >/dev/null; then
		echo "festival: $(dpkg-query -W -f '${Version}' festival 2>/dev/null) festvox-us-slt-hts $(dpkg-query -W -f '${Version}' festvox-us-slt-hts 2>/dev/null)"
	fi
	echo "espeak-ng: $(dpkg-query -W -f '${Version}' espeak-ng 2>/dev/null || espeak-ng --version) (160 words/min)"
	echo "voices: ${voices[*]}"
	echo "noise levels: ${levels[*]}"
	echo "sox: $(dpkg-query -W -f '${Version}' sox 2>/dev/null || sox --version)"
} >"$out/VERSIONS"
echo "generate.sh: $n utterances in $out"
