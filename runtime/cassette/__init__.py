"""Recorded sessions on the rehearsal model: the cassette file, the scrubber that keeps secrets
out, the relay that records a real session (imports httpx), a cassette as a rehearsal
script, and a replay checked against its recording."""
