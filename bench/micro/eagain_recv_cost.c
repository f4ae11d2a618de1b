// What one recv on a drained non-blocking TCP socket costs (the call a relay's next read made before
// the drained read, proxy/drained_read.h), beside a 200-byte send + recv pair on loopback.
//   cc -O2 -o /tmp/eagain_recv_cost bench/micro/eagain_recv_cost.c && taskset -c 1 /tmp/eagain_recv_cost
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

int main(void) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(listener, (struct sockaddr*)&a, sizeof a) || listen(listener, 1) ||
      getsockname(listener, (struct sockaddr*)&a, &len))
    return perror("listen"), 1;
  int client = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(client, (struct sockaddr*)&a, sizeof a)) return perror("connect"), 1;
  int server = accept(listener, 0, 0);
  fcntl(server, F_SETFL, O_NONBLOCK);

  char buf[16384], msg[200] = {0};
  const int n = 1000000;
  int failed = 0;
  double t0 = seconds();
  for (int i = 0; i < n; ++i) failed += recv(server, buf, sizeof buf, 0) < 0 && errno == EAGAIN;
  double t1 = seconds();
  printf("recv on a drained socket (EAGAIN): %.3f us each (%d of %d failed as expected)\n", (t1 - t0) * 1e6 / n, failed, n);
  t0 = seconds();
  for (int i = 0; i < n / 4; ++i) {
    send(client, msg, sizeof msg, 0);
    while (recv(server, buf, sizeof buf, 0) < 0) {}
  }
  t1 = seconds();
  printf("200-byte send + recv pair: %.3f us each\n", (t1 - t0) * 1e6 / (n / 4));
  return 0;
}
