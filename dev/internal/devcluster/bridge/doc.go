// Package bridge carries TCP connections between the host and a User-mode Linux guest over a
// serial line, in both directions.
//
// A guest has no network besides its own loopback. The host hands UML one end of a socketpair
// as a serial line (uml.Options.SerialLines; the guest sees /dev/ttyS<n>), and the two sides run
// a [yamux] session over it: one multiplexed stream per TCP connection, with flow control and
// half-close. This lets a node agent in a guest reach the host's kube-apiserver at a guest-local
// 127.0.0.1 port, and lets the host reach the agent's gRPC and HTTP listeners.
//
// Beneath yamux, the line carries credit-based flow control: data goes in frames of at most
// 1 KiB, the receiving side returns credit as its consumer reads, and a sender never has more
// than [Options.LineWindow] (default [DefaultLineWindow], 2 KiB) unconsumed bytes on the line.
// UML's serial line stops delivering host→guest bytes for good once the guest tty's input
// buffers fill up and the tty throttles, which plain yamux (256 KiB stream windows) does after a
// few hundred KB; with the small window they never fill. Measured in UML: 0.5–1 MB/s each way.
//
// Both sides are a [Session]; they differ only in how the line is set up:
//
//   - [Host] takes the host end of the socketpair. It waits for the guest to announce itself, so
//     nothing is written before the guest has opened its tty (UML drops bytes that arrive
//     earlier).
//   - [Guest] opens the tty, puts it in raw mode (8-bit clean, no echo, no line editing) and
//     announces itself. [GuestConn] does the same over any connection, for tests.
//   - cmd guestbridge (./guestbridge) runs the guest side as a static program a guest init script
//     starts in the background.
//
// Every stream starts with a header naming the address the opening side wants the other side to
// dial, answered with "ok" or an error. A side only ever dials loopback IP addresses (127.0.0.0/8
// or ::1), and only those in [Options.Allow] when that is set, plus addresses in
// [Options.AllowNets] (networks inside its own namespaces, e.g. a guest's pod network); every
// other request is refused and reported to the opener. Host names, "localhost" included, are
// refused, so no lookup ever leaves the machine. Listeners ([Options.Forward], [Session.Forward])
// bind loopback addresses only.
//
// Connections end the way TCP does: when one end stops sending, the other end's reads see EOF
// while the opposite direction keeps flowing, and a connection goes away when both directions
// are done. Closing a Session closes its listeners, streams and forwarded connections and waits
// for every goroutine it started. There is no reconnect: a session ends when the line does, and
// [Session.Wait] reports why.
//
// [yamux]: https://github.com/hashicorp/yamux
package bridge
