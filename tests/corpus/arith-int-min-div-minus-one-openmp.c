// expect: - division
// options: --size N=8,M=1 --target openmp
void f(int N, int M, int A[N], int B[N]) {
  for (int i = 0; i < N; i++)
    B[i] = (A[i] - A[i] - 2147483647 - 1) / (M - 2);
}
