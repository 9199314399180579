#!/usr/bin/env bash
# Generates the speech recognizers' held-out set: every line of utterances.tsv spoken by two
# Debian TTS engines (flite's slt voice, espeak-ng's en-us voice), band-limited to the telephone
# band (300-3400 Hz), sent through G.711 mu-law and back, mixed with pink noise at one of two
# levels, at 8 kHz 16-bit mono, as the call's media carries it. Output: the WAV files, a
# manifest.tsv (file, voice, category, value, hints, noise, text) and VERSIONS (the engines'
# versions). sox runs with -R (fixed random seed), so the same engines give the same files.
#
# Needs: apt-get install -y flite espeak-ng sox
# Usage: hack/speech/generate.sh [output folder]   (default: internal/telephony/speech/testdata/heldout)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../internal/telephony/speech/testdata/heldout}
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
	flite) flite -voice slt -t "$2" -o "$3" ;;
	espeak) espeak-ng -v en-us -s 160 -w "$3" "$2" ;;
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
	for voice in flite espeak; do
		# Alternate two noise levels (about 30 and 24 dB below the speech's peak).
		if ((n % 2 == 0)); then noise=0.02; else noise=0.04; fi
		n=$((n + 1))
		file=$id-$voice.wav
		speak "$voice" "$text" "$work/tts.wav" </dev/null
		telephone "$work/tts.wav" "$out/$file" "$noise" </dev/null
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$file" "$voice" "$category" "$value" "$hints" "$noise" "$text" >>"$manifest"
	done
done <"$here/utterances.tsv"

{
	echo "flite: $(dpkg-query -W -f '${Version}' flite 2>/dev/null || flite --version | head -1) (voice slt)"
	echo "espeak-ng: $(dpkg-query -W -f '${Version}' espeak-ng 2>/dev/null || espeak-ng --version) (voice en-us, 160 words/min)"
	echo "sox: $(dpkg-query -W -f '${Version}' sox 2>/dev/null || sox --version)"
} >"$out/VERSIONS"
echo "generate.sh: $n utterances in $out"
