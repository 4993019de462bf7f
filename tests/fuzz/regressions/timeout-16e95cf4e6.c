void fz(int N, int ld_A1, int ld_B1, int ld_B2, int ld_C1, int ld_C2, double *A, double *B, const float *C, double *D) {
  for (int i = 2; i <= N - 1; i++) {
    for (int j = 0; j < max(N, N - 1); j++) {
      for (int k = 1; k <= N - 1; k++) {
        A[(N - k) * ld_A1 + (i - j + N)] = 0.0625 * A[(N - k - 1) * ld_A1 + (i - j + N)];
        A[(2 * j + 1) * ld_A1 + (2 * N - k - 1)] *= 0.5;
        B[((k) * ld_B1 + (i)) * ld_B2 + (j)] = 0.125 * B[((k + 2) * ld_B1 + (i)) * ld_B2 + (j)] + 0.25 * C[((i) * ld_C1 + (k)) * ld_C2 + (j + 2)];
      }
    }
    for (int j = 0; j < 6; j++) {
      D[0] += 0.125 * D[1];
    }
  }
}
