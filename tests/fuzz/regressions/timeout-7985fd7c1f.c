void fz(int N, int M, double beta, double A[M + 2][2 * M + 2 * N + 1], int B[M + N + 6], double C[3][2 * M + 1], float D[2 * N + 1][7], int E[N + 6][M + 1], int F[6][M + N + 1], int G[11][M + N + 1], int H[2 * M + 1][2 * N + 1]) {
  for (int i = 2; i < M; i++) {
    for (int j = 0; j < N; j++) {
      for (int k = 0; k < N; k++) {
        for (int l = 0; l < M; l++) {
          A[1][N - k + M - 1] = 0.25 * A[l][j + k + M] + 0.0625 * B[j + 1] + 0.125 * A[i + 2][j - l + M];
        }
      }
      for (int k = 0; k < M; k++) {
        if (j <= i) {
          for (int l = 0; l < 6; l++) {
            if (j + 2 < M) {
              A[i + 1][j + M] = 0.375 * A[i - 1][k + M] + 0.0625 * C[2][i - k + M] * beta + 0.0625 * D[2 * j + 1][l + 1];
              B[l] = (E[l - j + N][i + 1] + B[i + 4] + F[l][j + i] + 3) / 4;
              B[i + 3] = (G[2 * l][M - j + N - 1] + 3) / 2;
            }
          }
        } else {
          B[j + i + 2] = (B[j + i + 1] + H[k + i][2 * j + 1]) / 2;
        }
      }
    }
  }
}
