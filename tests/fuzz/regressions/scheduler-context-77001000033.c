void fz(int N, double A[2 * N + 1][N + 1], float B[N + 1][N + 1][N + 1], float C[2 * N + 1], double D[N + 1]) {
  for (int i = 0; i <= N - 1; i++) {
    A[2 * i][N - i] = 0.125 * fmin(A[2 * i + 2][N - i], A[i][i]);
    B[i][N - i - 1][i] *= 0.75;
    C[2 * i + 1] += 0.125 * D[i] + 0.0625 * C[2 * i];
  }
}
