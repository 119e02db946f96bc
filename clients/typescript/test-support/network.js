"use strict";
// A device's network for the offline-first tests (issue #37): a WebSocket constructor for the client's `WebSocket`
// option that throws while the device is offline — as a phone in airplane mode fails at once — and otherwise opens a
// real socket (Node's global WebSocket), counting the `events/donate` frames sent.

/**
 * The device's network: a WebSocket constructor (pass `WebSocket: net.WebSocket`) that throws while `offline`, as a
 * phone in airplane mode does, and otherwise opens a real socket, counting the `events/donate` frames sent; with
 * `loseAnswersAfter = n`, every frame received after the n-th donation was sent is dropped (that socket only).
 */
function network() {
  const net = { offline: true, donationsSent: 0, loseAnswersAfter: Infinity, sockets: [] };
  net.WebSocket = function DeviceWebSocket(url, protocols) {
    if (net.offline) throw new Error("connect ENETUNREACH (airplane mode)");
    const ws = new globalThis.WebSocket(url, protocols);
    let losing = false;
    const socket = {
      get url() {
        return ws.url;
      },
      get readyState() {
        return ws.readyState;
      },
      send(data) {
        if (/"method":"events\/donate"/.test(data) && ++net.donationsSent === net.loseAnswersAfter) losing = true;
        ws.send(data);
      },
      close(code, reason) {
        ws.close(code, reason);
      },
      set onopen(f) {
        ws.onopen = f;
      },
      set onmessage(f) {
        ws.onmessage = f && ((event) => (losing ? undefined : f(event)));
      },
      set onclose(f) {
        ws.onclose = f;
      },
      set onerror(f) {
        ws.onerror = f;
      },
    };
    net.sockets.push(socket);
    return socket;
  };
  return net;
}

module.exports = { network };
