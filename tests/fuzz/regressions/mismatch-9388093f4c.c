#define C_IDX(i0, i1, i2) (((i0) * ld_C1 + (i1)) * ld_C2 + (i2))
#define D_IDX(i0, i1, i2) (((i0) * ld_D1 + (i1)) * ld_D2 + (i2))
void fz(int N, int ld_C1, int ld_C2, int ld_D1, int ld_D2, double alpha, double beta, int *A, double *B, double *C, const double *D) {
  for (int i = 0; i < N; i++) {
    A[i + 2] += (A[i]) % 3;
    B[i + 2] += 0.125 * B[i];
  }
  for (int i = 0; i <= N - 2; i++) {
    for (int j = 0; j < N; j++) {
      if (j <= i) {
        for (int k = 0; k < min(N, N - 1); k++) {
          C[C_IDX(j, i + j + 1, 1)] = 0.25 * D[D_IDX(k, j, i)] * beta + 0.0625 * C[C_IDX(j, i + j, 1)] * alpha + 0.0625 * C[C_IDX(j + 1, i + j + 1, 1)];
        }
      }
    }
  }
}
