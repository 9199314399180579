// Package egress guards Switchboard's outbound connections to addresses an
// organization configures: webhook receivers, a bot's media stream, speech
// and text-to-speech servers, language models. URLPolicy checks a URL when
// it is saved and the address actually dialed, after DNS (DialContext,
// DialControl, GuardedTransport), so neither a URL nor a DNS answer can
// reach the cluster's own network unless the platform team trusts the host
// (TrustedHosts).
//
// It is a leaf: the webhook sender, telephony and analysis import it, and it
// imports none of them.
package egress
