void fz(int N, int M, double beta, double A[2 * M + N + 2][M + 2 * N + 4]) {
  for (int i = 0; i <= M - 1; i++) {
    A[N - i + M - 1][M - i + N + 1] = 0.125 * A[N - i + M - 1][M - i + N + 2] + 0.125 * A[i + M + 2][M - i + N + 1];
  }
  for (int i = 0; i < N; i++) {
    if ((i) % 2 == 0) {
      A[i + M][M - i + N + 1] += 0.125 * A[N - i + M - 1][N + 2] * beta;
      A[i + M + 2][i + N + 2] += 0.0625 * fmax(A[i + M + 2][i + N + 4], A[i + M + 2][i + N]);
    }
  }
}
