#define A_IDX(i0, i1) ((i0) * ld_A1 + (i1))
void fz(int N, int M, int ld_A1, int *A, double *B) {
  for (int i = 0; i <= M - 2; i++) {
    if ((i) % 2 == 1 && (i) % 2 == 0) {
      for (int j = max(0, i - 1); j < min(M, i + 2); j++) {
        A[A_IDX(2 * j + M, N - i + M - 1)] += (A[A_IDX(N - i + M - 1, j + i + M)]) % 3;
      }
    }
  }
  for (int i = 0; i < N; i += 2) {
    double acc0 = 0.5;
    for (int j = 0; j < max(M, M - 1); j++) {
      acc0 += 0.0625 * B[i + 2];
    }
    B[i] += 0.0625 * acc0;
  }
}
