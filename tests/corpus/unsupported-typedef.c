// expect: 3:16 typedef
// options: --size N=8
typedef double real;
void f(int N, double A[N], double B[N]) {
  B[0] = A[0];
}
