void fz(int N, int M, int A[2 * N + 3][M + 3 * N + 1], int B[2 * N + 1][N + 2][2 * N + 2], int C[N + 1], float D[M + 1][M + 1], double E[M + N + 1], float F[2 * M + 1][M + 1], double G[M + 1][M + 1]) {
  for (int i = 0; i < N; i++) {
    for (int j = i; j < N; j += 2) {
      A[i + j][M - j + N - 1] = (A[i + j + 2][M - j + N - 1] + B[j + N + 1][1][i + 2]) / 2;
      A[2][2 * i + N + 1] = (B[j - i + N][i + 1][2 * j + 1] + C[i] + 3) / 3;
    }
  }
  for (int i = 0; i < M; i++) {
    for (int j = 2; j < M; j++) {
      D[j - 2][i + 1] = 0.25 * E[N - j + M - 1] + 0.125 * D[j][i + 1] + 0.0625 * fmin(F[i + j][j], G[M - i - 1][j]);
    }
  }
}
